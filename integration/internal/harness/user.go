package harness

import (
	"os"
	"testing"
)

// User says who runs the program: the test's own user (root, where the
// lab can switch users), or nobody (uid 65534).
type User bool

// The users.
const (
	AsSelf   User = false
	AsNobody User = true
)

func (u User) String() string {
	if u == AsNobody {
		return "nobody"
	}
	if os.Geteuid() == 0 {
		return "root"
	}
	return "self"
}

// Unprivileged is the user for cases that need no privilege: nobody when
// the tests run as root, else the test's own (unprivileged) user.
func Unprivileged() User {
	if os.Geteuid() == 0 {
		return AsNobody
	}
	return AsSelf
}

// ForUsers runs f as each of users (root and nobody, say), as subtests.
func ForUsers(t *testing.T, users []User, f func(t *testing.T, u User)) {
	for _, u := range users {
		t.Run(u.String(), func(t *testing.T) { f(t, u) })
	}
}
