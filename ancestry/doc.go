// Package ancestry reads which goroutine made a system call, and which
// goroutines created it, from a stopped Go process: the evidence that
// ties a call made in a goroutine of a library to the test whose code
// started it (docs/tests.md, "Which test made a call").
//
// # The runtime's own data
//
// Since Go 1.21 every goroutine (runtime.g) records the goroutine that
// created it (parentGoid) and the pc of the go statement (gopc); with
// GODEBUG=tracebackancestors=N it also keeps the stack each of its N
// nearest creators had at the go statement (ancestors). Package
// ancestry reads them where the runtime keeps them:
//
//   - The layout of runtime.g, runtime.gobuf and runtime.ancestorInfo
//     comes from the executable's own type descriptors (the runtime
//     allocates gs with new(g), so the linker keeps g's descriptor,
//     field names and offsets included, even in a stripped test
//     binary): no table per Go version, and a layout that lacks a
//     field (Go before 1.21: no parentGoid) is refused by name.
//   - The list of every goroutine (runtime.allgs) is a variable the
//     stripped binary does not name: its address is read from the code
//     of runtime.forEachG, whose first data reference after it takes
//     allglock is allgs (amd64: a RIP-relative load; arm64: ADRP and
//     an ADD, LDR or LDP). Every use checks what it found: allgs[0]
//     is the main goroutine (goid 1), and each g read holds its own
//     address (g.sched.g).
//
// # Reading a live process
//
// The calling goroutine is the one whose stack holds the thread's sp
// (the thread is held in the kernel: its goroutine neither runs nor
// moves its stack). Its creators are found by goid among allgs. A
// creator that still lives and does not run (parked, runnable, in a
// system call) shows its stack now, unwound from its saved registers;
// its stack's outermost frames say whose goroutine it is, which does
// not change while it lives. A creator that has exited is known only
// from ancestors, when the runtime kept them; without them the chain
// ends there, saying so.
//
// TestEveryGoVersion reads programs built by each Go release from 1.21
// to 1.26 (toolchains from the module proxy), checking the layout
// against their symbols and DWARF, and the chain against what ran.
//
// The process runs on while it is read: every value is checked before
// it is used, and what cannot be read ends the chain with the reason,
// never a guess.
package ancestry
