package hub

import (
	"github.com/nettrap/nettrap/audit"
	"github.com/nettrap/nettrap/guard"
	"github.com/nettrap/nettrap/policy"
)

// Toolchain tells whether a call of pid would count as the go command's
// own: under no registered inner, and toolchain.
func (s *Server) Toolchain(pid int) bool {
	in, _ := s.find(pid)
	return in == nil && s.toolchain(pid)
}

// toolchain tells whether pid, under no registered inner, is the go
// command (Server.IsGo) or, unless sealed, one of its descendants. A
// process that left the go command's tree (its parent died) is not, nor
// one under an inner whose connection ended; nor any once a test binary
// may have run, where the tests can reach the go command (GoReachable).
func (s *Server) toolchain(pid int) bool {
	if s.IsGo == nil || pid <= 0 || s.GoReachable && s.Registered() > 0 {
		return false
	}
	if s.Sealed {
		return s.IsGo(pid)
	}
	for i, p := 0, pid; i < maxDepth && p > 1; i, p = i+1, s.parent(p) {
		if s.IsGo(p) {
			return true
		}
		if s.wasInner(p) {
			return false
		}
	}
	return false
}

// toolchainTransaction is the transaction of a call of the go command's
// own: no test; the policy lets its destinations through (audited).
type toolchainTransaction struct{}

func (toolchainTransaction) Who() guard.Who {
	return guard.Who{Context: policy.Context{Toolchain: true}}
}
func (toolchainTransaction) Report(audit.Record, string) {}
func (toolchainTransaction) End()                        {}

func (s *Server) wasInner(pid int) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.dropped[pid] || s.inners[pid] != nil
}

// Outside tells whether pid is under no registered inner: a process of
// the command itself (make, a shell, a go command), not of a test.
func (s *Server) Outside(pid int) bool {
	in, _ := s.find(pid)
	return in == nil
}
