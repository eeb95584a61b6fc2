package callstack

import (
	"fmt"
	"net"
	"os"
	"runtime"
	"syscall"
	"testing"
	"time"
)

// The victim: this test binary re-executed with victimEnv set blocks a
// goroutine in read(2) on a pipe nobody writes, at the lines marked
// "// at:NAME" below, after writing "ready FD" to its standard output.
// The test unwinds the blocked thread from outside.
const victimEnv = "NETTRAP_CALLSTACK_VICTIM"

func TestMain(m *testing.M) {
	switch os.Getenv(victimEnv) {
	case "":
		os.Exit(m.Run())
	case "goroutine":
		fd := victimPipe()
		victimStart(fd) // at:start
		time.Sleep(time.Hour)
	case "deep":
		fd := victimPipe()
		go victimDeep(5, fd) // at:deepgo
		time.Sleep(time.Hour)
	case "notify":
		// The main goroutine, on the thread whose connect waits for a
		// seccomp notification.
		runtime.LockOSThread()
		listener := notifyConnect()
		victimConnect() // at:notify
		listener.Close()
	case "dial":
		// The same through the net package.
		runtime.LockOSThread()
		listener := notifyConnect()
		fmt.Println("ready -1")
		victimDial() // at:dialmain
		listener.Close()
	case "test":
		os.Exit(m.Run()) // runs TestCallstackVictim only
	case "spin":
		// Runs on its thread (the process's first) and never blocks:
		// with GODEBUG=asyncpreemptoff=1, a loop without calls is never
		// preempted, so the thread stays running until it is stopped.
		runtime.LockOSThread()
		fmt.Println("ready")
		for {
		}
	}
	os.Exit(2)
}

// TestCallstackVictim blocks the test's own goroutine, when the test
// binary is a victim (victimEnv=test).
func TestCallstackVictim(t *testing.T) {
	if os.Getenv(victimEnv) != "test" {
		t.Skip("the victim of TestUnwindTest, run by it")
	}
	victimOuter(victimPipe()) // at:test
}

// victimPipe returns the read end of a blocking pipe nobody writes to,
// and says so.
func victimPipe() int {
	var p [2]int
	if err := syscall.Pipe(p[:]); err != nil {
		panic(err)
	}
	fmt.Printf("ready %d\n", p[0])
	return p[0]
}

// victimStart starts the goroutine that blocks.
//
//go:noinline
func victimStart(fd int) {
	go victimGoroutine(fd) // at:go
}

//go:noinline
func victimGoroutine(fd int) {
	victimOuter(fd) // at:goroutine
}

//go:noinline
func victimOuter(fd int) {
	victimInlined(fd) // at:outer
}

// victimInlined is inlined into victimOuter.
func victimInlined(fd int) {
	victimInner(fd) // at:inlined
}

//go:noinline
func victimInner(fd int) {
	var b [1]byte
	syscall.Read(fd, b[:]) // at:inner
	panic("read returned")
}

// victimDeep makes the stack n frames deeper, for the benchmark.
//
//go:noinline
func victimDeep(n, fd int) {
	if n > 0 {
		victimDeep(n-1, fd) // at:deep
		return
	}
	victimOuter(fd) // at:deepest
}

// victimConnect connects a socket, blocking until the seccomp
// notification is answered (never).
//
//go:noinline
func victimConnect() {
	s, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM, 0)
	if err != nil {
		panic(err)
	}
	fmt.Printf("ready %d\n", s)
	syscall.Connect(s, &syscall.SockaddrInet4{Port: 9, Addr: [4]byte{127, 0, 0, 1}}) // at:connect
	panic("connect returned")
}

// victimDial dials, blocking in connect until the seccomp notification
// is answered (never).
//
//go:noinline
func victimDial() {
	net.Dial("tcp", "127.0.0.1:9") // at:dial
	panic("dial returned")
}
