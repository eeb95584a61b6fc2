package supervisor_test

import (
	"os"
	"testing"
)

// underPtrace tells whether the tests run under the ptrace engine
// (NETTRAP_SUPERVISOR_TEST_ENGINE=ptrace).
func underPtrace() bool { return os.Getenv(engineEnv) == "ptrace" }

// skipUnderPtrace skips a test of what only the notify engine does; why
// says what.
func skipUnderPtrace(t *testing.T, why string) {
	t.Helper()
	if underPtrace() {
		t.Skipf("the ptrace engine %s", why)
	}
}
