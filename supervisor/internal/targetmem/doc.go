// Package targetmem reads the memory of a stopped target (Reader): with
// process_vm_readv where that is allowed, through /proc/TID/mem where a
// seccomp profile refuses it. Every failure is ErrFault, which the
// supervisor answers with EFAULT, as the kernel would.
package targetmem
