// Package whereblame is the fixture of which test a blocked attempt is
// blamed on, beside its location (issue 36): parallel tests, each
// pinned by its own goroutine's frames, a parallel test's subtest, and
// closures one test makes and stores that a later test calls from a
// goroutine. nettrap's integration tests compare the lines, audit
// records and annotations with where.golden (after package where's).
// Keep the line numbers stable: the golden file names them.
//
// Every dial here goes to a fake host of the integration sandbox
// (package where's helpers, package fx): outside it, they refuse.
package whereblame

import (
	"sync"
	"time"

	"example.com/fixtures/where"
)

// MakeDialer returns a dialer of port: small enough for the compiler to
// inline into its caller, which then names its closure after the
// calling test (whereblame.TestStoredA.MakeDialer.func1).
func MakeDialer(port int) func() {
	return func() { _ = where.Fetch(port) }
}

// Prober is a library's health checker: StartProber runs its loop in a
// goroutine, and the loop, once its timer fires, checks in a goroutine
// of its own: two creators deep, none of them test code.
type Prober struct {
	port int
	Done chan struct{}
}

// StartProber starts a prober of port that checks once, after delay.
func StartProber(port int, delay time.Duration) *Prober {
	p := &Prober{port: port, Done: make(chan struct{})}
	go p.loop(delay)
	return p
}

func (p *Prober) loop(delay time.Duration) {
	<-time.After(delay)
	go p.check()
	<-p.Done
}

func (p *Prober) check() {
	_ = where.Fetch(p.port)
	close(p.Done)
}

// Pool is a worker pool: the first Submit starts its worker, which runs
// every later job, whichever test submits it.
type Pool struct {
	once sync.Once
	jobs chan func()
}

// Submit runs f on the pool's worker and waits for it.
func (p *Pool) Submit(f func()) {
	p.once.Do(func() {
		p.jobs = make(chan func())
		go p.work()
	})
	done := make(chan struct{})
	p.jobs <- func() { f(); close(done) }
	<-done
}

func (p *Pool) work() {
	for f := range p.jobs {
		f()
	}
}
