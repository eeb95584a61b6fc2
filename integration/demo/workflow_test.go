package demo

import (
	"archive/zip"
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/nettrap/nettrap/integration/internal/lab"
	"github.com/nettrap/nettrap/integration/internal/sandbox"
)

// workflowFile is the fork-PR workflow the docs give users to copy.
var workflowFile = filepath.Join("..", "..", "docs", "examples", "github", "pull-request.yml")

// stepGuard only stops a hung step (a go install compiles the standard
// library for a user with an empty cache); it is not an assertion about
// speed.
const stepGuard = 15 * time.Minute

// The workflow as GitHub reads it, as much of it as the test looks at.
type ghWorkflow struct {
	Name        string               `yaml:"name"`
	On          map[string]any       `yaml:"on"`
	Permissions map[string]string    `yaml:"permissions"`
	Jobs        map[string]ghJob     `yaml:"jobs"`
	Env         map[string]string    `yaml:"env"`
	Defaults    map[string]yaml.Node `yaml:"defaults"`
}

type ghJob struct {
	RunsOn      string            `yaml:"runs-on"`
	Permissions map[string]string `yaml:"permissions"`
	Container   any               `yaml:"container"`
	Env         map[string]string `yaml:"env"`
	Steps       []ghStep          `yaml:"steps"`
}

type ghStep struct {
	Name             string            `yaml:"name"`
	Uses             string            `yaml:"uses"`
	Run              string            `yaml:"run"`
	If               string            `yaml:"if"`
	With             map[string]string `yaml:"with"`
	Env              map[string]string `yaml:"env"`
	Shell            string            `yaml:"shell"`
	WorkingDirectory string            `yaml:"working-directory"`
}

func (s ghStep) String() string {
	if s.Name != "" {
		return s.Name
	}
	if s.Uses != "" {
		return "uses: " + s.Uses
	}
	return "run: " + strings.TrimSpace(s.Run)
}

func readWorkflow(t *testing.T) ghWorkflow {
	t.Helper()
	b, err := os.ReadFile(workflowFile)
	if err != nil {
		t.Fatal(err)
	}
	var w ghWorkflow
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true) // a key this test does not know is a key it would ignore
	if err := dec.Decode(&w); err != nil {
		t.Fatalf("%s: %v", workflowFile, err)
	}
	return w
}

// TestForkPRWorkflowShape checks what makes the workflow fit for pull
// requests from forks, as docs/running.md says it is: the pull_request
// event (never pull_request_target, which runs with the base repository's
// secrets), a read-only token, nettrap installed before the pull
// request's code is checked out, the checkout without the token kept,
// and the tests run --sealed.
func TestForkPRWorkflowShape(t *testing.T) {
	w := readWorkflow(t)
	if _, ok := w.On["pull_request"]; !ok {
		t.Errorf("on: %v, want pull_request", keysOf(w.On))
	}
	if _, ok := w.On["pull_request_target"]; ok {
		t.Error("on: pull_request_target runs a fork's code with the base repository's secrets and a write token")
	}
	if fmt.Sprint(w.Permissions) != "map[contents:read]" {
		t.Errorf("permissions: %v, want only contents: read", w.Permissions)
	}
	if len(w.Jobs) != 1 {
		t.Fatalf("%d jobs, want 1", len(w.Jobs))
	}
	for name, j := range w.Jobs {
		if j.Permissions != nil {
			t.Errorf("job %s widens permissions: %v", name, j.Permissions)
		}
		if j.RunsOn != "ubuntu-latest" {
			t.Errorf("job %s runs on %q; docs/running.md describes ubuntu-latest", name, j.RunsOn)
		}
		install, checkout, sealed := -1, -1, -1
		for i, s := range j.Steps {
			switch {
			case strings.HasPrefix(s.Uses, "actions/checkout@"):
				checkout = i
				if s.With["persist-credentials"] != "false" {
					t.Errorf("%s: persist-credentials is %q, want false (the token would stay in .git/config for the tests)", s, s.With["persist-credentials"])
				}
			case strings.Contains(s.Run, "go install github.com/nettrap/nettrap/cmd/nettrap@"):
				install = i
			case strings.Contains(s.Run, "nettrap --sealed ") && strings.Contains(s.Run, " -- go test ./..."):
				sealed = i
			}
		}
		if install < 0 || checkout < 0 || sealed < 0 {
			t.Fatalf("job %s: go install of nettrap at step %d, checkout at %d, nettrap --sealed -- go test ./... at %d: want all three", name, install, checkout, sealed)
		}
		if install > checkout || checkout > sealed {
			t.Errorf("job %s: want nettrap installed (step %d) before the checkout (%d), and the tests run after it (%d)", name, install, checkout, sealed)
		}
	}
}

// TestForkPRWorkflow runs the fork-PR workflow's job on this machine, its
// steps in order as the runner would: each run: step with bash -e, as a
// user that is not root (the runner's steps run as the user runner) when
// this test can switch to one, with the runner's variables (CI,
// GITHUB_ACTIONS, RUNNER_TEMP, GITHUB_STEP_SUMMARY, ...). The uses: steps
// are played: setup-go puts $(go env GOPATH)/bin on PATH (this machine's
// Go stands in for the version asked), checkout copies a fixture module
// into the workspace, upload-artifact checks that its file is there.
// `go install github.com/nettrap/nettrap/cmd/nettrap@latest` runs as
// written, against a module proxy in a directory that serves this
// repository's working tree as the latest version (and nettrap's
// dependencies from the module cache): the nettrap installed is this
// one. Inside the sandbox nothing can leave the machine.
//
// The demo suite (examples/) fails the job with status 1: a test that
// forgot its mock, and the marked live test (markers count for nothing
// under --sealed), are blocked, and the audit log is uploaded all the
// same. A clean module passes.
func TestForkPRWorkflow(t *testing.T) {
	sandbox.Require(t)
	// Under an outer nettrap the job's nettrap version names the ptrace
	// engine, not what GitHub's runners show. (Its nettrap --sealed -- go
	// test's inner nettraps dial their hub's unix socket by path, which
	// failed there until issue 37's fix: supervisor/internal/emulate,
	// procself.go.)
	lab.SkipUnder(t, "nettrap version under an outer nettrap names the ptrace engine, not what a runner shows", lab.VariantOuter)
	for _, tool := range []string{"bash", "go"} {
		if _, err := exec.LookPath(tool); err != nil {
			require(t, "the workflow test needs "+tool+": "+err.Error())
		}
	}
	w := readWorkflow(t)
	j := onlyJob(t, w)
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	r := newRunner(t, root)

	t.Run("demo suite", func(t *testing.T) {
		job := r.job(t, filepath.Join(root, "examples"))
		res := job.run(t, w, j)
		sealed := res.step(t, "nettrap --sealed")
		if res.ok || sealed.code != 1 {
			t.Errorf("the job: ok=%v, the nettrap step's status %d; want the job failed by the nettrap step's 1", res.ok, sealed.code)
		}
		for _, want := range []string{
			"nettrap: Outbound network blocked: connect tcp 203.0.113.80:80 (external) during TestForecastBergen",
			"--- FAIL: TestForecastBergen",
			"nettrap: Outbound network blocked: connect tcp 203.0.113.80:80 (external) during TestLiveForecast",
			"the test's network marker is ignored under --sealed",
			"--- FAIL: TestLiveForecast",
			"FAIL\tgithub.com/nettrap/nettrap/examples/weather",
			"::error",
		} {
			if !strings.Contains(sealed.out, want) {
				t.Errorf("the nettrap step's output lacks %q", want)
			}
		}
		if strings.Contains(sealed.out, "--- FAIL: TestForecast ") {
			t.Error("TestForecast, which mocks the API on loopback, failed under --sealed")
		}
		upload := res.step(t, "upload-artifact")
		if !upload.ran || !upload.found {
			t.Errorf("the audit log's upload: ran %v, file found %v; want it uploaded after the failed step", upload.ran, upload.found)
		} else if log := job.read(t, upload.path); !strings.Contains(log, `"decision":"denied"`) || !strings.Contains(log, "203.0.113.80") {
			t.Errorf("the uploaded audit log holds no denial of 203.0.113.80:\n%s", log)
		}
		if sum := job.read(t, job.summary); !strings.Contains(sum, "203.0.113.80") {
			t.Errorf("the step summary names no blocked attempt:\n%s", sum)
		}
		r.checkVersion(t, res)
		if t.Failed() {
			t.Logf("the job's steps:\n%s", res)
		}
	})

	t.Run("clean module", func(t *testing.T) {
		job := r.job(t, filepath.Join(root, "integration", "testdata", "container", "clean"))
		res := job.run(t, w, j)
		if !res.ok {
			t.Errorf("the job failed on a clean module:\n%s", res)
		}
		if sealed := res.step(t, "nettrap --sealed"); !strings.Contains(sealed.out, "ok  \texample.com/clean") {
			t.Errorf("the nettrap step did not run the clean suite:\n%s", sealed.out)
		}
	})
}

// wfRunner is the machine the jobs run on: a user, a module proxy, and a
// home directory whose Go caches the jobs share (as runners with a warm
// cache would; each job has a workspace of its own).
type wfRunner struct {
	base  string
	cred  *syscall.Credential // nil: this process's user
	env   []string            // the runner's environment, PATH and HOME included
	gobin string              // $(go env GOPATH)/bin, which setup-go puts on PATH
	proxy string
}

// nobody is the user the steps run as when this test can switch users:
// the runner's steps run as a user that is not root.
const nobody = 65534

func newRunner(t *testing.T, root string) *wfRunner {
	t.Helper()
	base, err := os.MkdirTemp("", "nettrap-workflow-")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(base, 0o755); err != nil { // for the steps' user
		t.Fatal(err)
	}
	t.Cleanup(func() { removeAll(t, base) })
	r := &wfRunner{base: base}
	if os.Geteuid() == 0 && mapped(nobody) {
		r.cred = &syscall.Credential{Uid: nobody, Gid: nobody}
	} else {
		t.Logf("the steps run as uid %d (this test cannot switch to a user that is not root)", os.Geteuid())
	}
	r.proxy = filepath.Join(base, "proxy")
	makeProxy(t, root, r.proxy)
	home := filepath.Join(base, "home")
	r.gobin = filepath.Join(home, "go", "bin")
	r.mkdir(t, home)
	goroot, err := exec.Command("go", "env", "GOROOT").Output()
	if err != nil {
		t.Fatalf("go env GOROOT: %v", err)
	}
	r.env = []string{
		"HOME=" + home,
		"PATH=" + strings.Join([]string{filepath.Join(strings.TrimSpace(string(goroot)), "bin"), "/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin"}, ":"),
		"LANG=C.UTF-8",
		// The runner's own variables.
		"CI=true",
		"GITHUB_ACTIONS=true",
		"GITHUB_EVENT_NAME=pull_request",
		"RUNNER_OS=Linux",
		// This machine's stand-ins: the proxy that serves this nettrap as
		// the latest (and its dependencies), no checksum database to ask
		// (there is no network here), this machine's Go for the version
		// setup-go would install.
		"GOPROXY=file://" + filepath.Join(r.proxy, "this") + ",file://" + filepath.Join(r.proxy, "deps"),
		"GOSUMDB=off",
		"GOTOOLCHAIN=local",
	}
	return r
}

// mapped says whether uid exists in this process's user namespace.
func mapped(uid int) bool {
	b, err := os.ReadFile("/proc/self/uid_map")
	if err != nil {
		return false
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) != 3 {
			continue
		}
		first, err1 := strconv.Atoi(f[0])
		n, err2 := strconv.Atoi(f[2])
		if err1 == nil && err2 == nil && uid >= first && uid < first+n {
			return true
		}
	}
	return false
}

// mkdir makes dir (and its parents below base) owned by the steps' user.
func (r *wfRunner) mkdir(t *testing.T, dir string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	r.chown(t, dir)
}

func (r *wfRunner) chown(t *testing.T, path string) {
	t.Helper()
	if r.cred == nil {
		return
	}
	for p := path; strings.HasPrefix(p, r.base+"/"); p = filepath.Dir(p) {
		if err := os.Lchown(p, int(r.cred.Uid), int(r.cred.Gid)); err != nil {
			t.Fatal(err)
		}
	}
}

// checkVersion checks the `nettrap version` step's output against what
// docs/running.md says it should say on GitHub's runners, where the steps
// run as a user that is not root: every line of that block but the
// kernel's release and the Landlock domain, which depend on the kernel.
func (r *wfRunner) checkVersion(t *testing.T, res jobResult) {
	t.Helper()
	if r.cred == nil {
		t.Log("not checking nettrap version against docs/running.md: the steps did not run as a user that is not root")
		return
	}
	v := res.step(t, "nettrap version")
	if v.code != 0 {
		t.Errorf("nettrap version: status %d\n%s", v.code, v.out)
		return
	}
	got := strings.Split(v.out, "\n")
	for _, line := range docsVersionBlock(t) {
		if strings.HasPrefix(line, "kernel: ") || strings.HasPrefix(line, "tree domain: ") {
			continue
		}
		if !slices.Contains(got, line) {
			t.Errorf("docs/running.md says nettrap version prints %q on GitHub's runners; here, as uid %d, it did not:\n%s", line, nobody, v.out)
		}
	}
}

// docsVersionBlock is the code block of docs/running.md's "Pull requests
// from forks" that begins with nettrap version's kernel line.
func docsVersionBlock(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "docs", "running.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, sec, ok := strings.Cut(string(b), "\n### Pull requests from forks\n")
	if !ok {
		t.Fatal("docs/running.md has no heading \"### Pull requests from forks\"")
	}
	_, block, ok := strings.Cut(sec, "\n```\nkernel: ")
	block, _, ok2 := strings.Cut(block, "\n```\n")
	if !ok || !ok2 {
		t.Fatal("docs/running.md's \"Pull requests from forks\" has no code block of nettrap version's lines")
	}
	return strings.Split("kernel: "+block, "\n")
}

// wfJob is one run of the job: a workspace with the fixture checked out.
type wfJob struct {
	r                      *wfRunner
	fixture                string
	dir, workspace, temp   string
	summary, ghPath, ghEnv string
}

func (r *wfRunner) job(t *testing.T, fixture string) *wfJob {
	t.Helper()
	dir, err := os.MkdirTemp(r.base, "job-")
	if err != nil {
		t.Fatal(err)
	}
	j := &wfJob{r: r, fixture: fixture, dir: dir,
		workspace: filepath.Join(dir, "work", filepath.Base(fixture)),
		temp:      filepath.Join(dir, "_temp"),
	}
	j.summary = filepath.Join(j.temp, "_runner_file_commands", "step_summary")
	j.ghPath = filepath.Join(j.temp, "_runner_file_commands", "add_path")
	j.ghEnv = filepath.Join(j.temp, "_runner_file_commands", "set_env")
	for _, d := range []string{j.workspace, filepath.Join(j.temp, "_runner_file_commands"), filepath.Join(dir, "tmp")} {
		r.mkdir(t, d)
	}
	for _, f := range []string{j.summary, j.ghPath, j.ghEnv} {
		if err := os.WriteFile(f, nil, 0o644); err != nil {
			t.Fatal(err)
		}
		r.chown(t, f)
	}
	return j
}

func (j *wfJob) read(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Error(err)
	}
	return string(b)
}

// stepResult is what one step did.
type stepResult struct {
	step  ghStep
	ran   bool
	code  int
	out   string
	path  string // upload-artifact: the file it would upload
	found bool   // and whether it was there
}

type jobResult struct {
	ok    bool
	steps []stepResult
}

func (res jobResult) String() string {
	var b strings.Builder
	for _, s := range res.steps {
		if !s.ran {
			fmt.Fprintf(&b, "- %s: skipped\n", s.step)
			continue
		}
		fmt.Fprintf(&b, "- %s: status %d\n%s", s.step, s.code, indent(s.out))
	}
	return b.String()
}

func indent(s string) string {
	if s == "" {
		return ""
	}
	return "    " + strings.ReplaceAll(strings.TrimSuffix(s, "\n"), "\n", "\n    ") + "\n"
}

// step is the first step whose run: or uses: holds what.
func (res jobResult) step(t *testing.T, what string) stepResult {
	t.Helper()
	for _, s := range res.steps {
		if strings.Contains(s.step.Run, what) || strings.Contains(s.step.Uses, what) {
			return s
		}
	}
	t.Fatalf("the workflow has no step with %q", what)
	return stepResult{}
}

// run runs the job's steps in order: a step runs while no step before it
// failed, unless its if: says always() or failure().
func (j *wfJob) run(t *testing.T, w ghWorkflow, job ghJob) jobResult {
	t.Helper()
	if job.Container != nil || len(w.Env) > 0 || len(job.Env) > 0 || len(w.Defaults) > 0 {
		t.Fatalf("the workflow sets a container, env or defaults, which this test does not play: teach it")
	}
	env := append(slices.Clone(j.r.env),
		"GITHUB_WORKSPACE="+j.workspace,
		"RUNNER_TEMP="+j.temp,
		"TMPDIR="+filepath.Join(j.dir, "tmp"),
		"GITHUB_STEP_SUMMARY="+j.summary,
		"GITHUB_PATH="+j.ghPath,
		"GITHUB_ENV="+j.ghEnv,
	)
	res := jobResult{ok: true}
	for _, s := range job.Steps {
		sr := stepResult{step: s}
		switch s.If {
		case "", "success()":
			sr.ran = res.ok
		case "always()":
			sr.ran = true
		case "failure()":
			sr.ran = !res.ok
		default:
			t.Fatalf("%s: if: %q, which this test does not play: teach it", s, s.If)
		}
		if sr.ran {
			switch {
			case s.Run != "":
				sr.code, sr.out = j.runStep(t, s, env)
			case s.Uses != "":
				env = j.useStep(t, s, env, &sr)
			default:
				t.Fatalf("step %d has neither run: nor uses:", len(res.steps))
			}
			env = j.fileCommands(t, env)
		}
		if sr.ran && sr.code != 0 {
			res.ok = false
		}
		res.steps = append(res.steps, sr)
	}
	return res
}

// runStep runs a run: step's script as the runner does when no shell is
// given: bash -e, in the workspace, as the steps' user.
func (j *wfJob) runStep(t *testing.T, s ghStep, env []string) (int, string) {
	t.Helper()
	if s.Shell != "" || s.WorkingDirectory != "" || len(s.Env) > 0 {
		t.Fatalf("%s: shell, working-directory or env, which this test does not play: teach it", s)
	}
	script := filepath.Join(j.temp, fmt.Sprintf("step-%d.sh", time.Now().UnixNano()))
	if err := os.WriteFile(script, []byte(j.expand(t, s.Run)), 0o644); err != nil {
		t.Fatal(err)
	}
	j.r.chown(t, script)
	ctx, cancel := context.WithTimeout(context.Background(), stepGuard)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-e", script)
	cmd.Dir, cmd.Env = j.workspace, env
	if j.r.cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: j.r.cred}
	}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0, out.String()
	case errors.As(err, &ee) && ee.ExitCode() >= 0:
		return ee.ExitCode(), out.String()
	}
	t.Fatalf("%s: %v\n%s", s, err, out.String())
	return -1, ""
}

// useStep plays the actions the workflow uses.
func (j *wfJob) useStep(t *testing.T, s ghStep, env []string, sr *stepResult) []string {
	t.Helper()
	action, _, _ := strings.Cut(s.Uses, "@")
	switch action {
	case "actions/setup-go":
		want := s.With["go-version"]
		if have := runtime.Version(); !strings.HasPrefix(have, "go"+want) {
			t.Logf("%s: asks for Go %s; this machine's %s stands in", s, want, have)
		}
		j.r.mkdir(t, j.r.gobin)
		return prependPath(env, j.r.gobin)
	case "actions/checkout":
		copyTree(t, j.fixture, j.workspace, j.r.chown)
	case "actions/upload-artifact":
		sr.path = j.expand(t, s.With["path"])
		_, err := os.Stat(sr.path)
		sr.found = err == nil
		if !sr.found && s.With["if-no-files-found"] == "error" {
			sr.code, sr.out = 1, "no file at "+sr.path
		}
	default:
		t.Fatalf("%s: an action this test does not play: teach it", s)
	}
	return env
}

// expr is a ${{ … }} expression.
var expr = regexp.MustCompile(`\$\{\{\s*([^}]*?)\s*\}\}`)

// expand replaces the expressions the workflow uses with their values.
func (j *wfJob) expand(t *testing.T, s string) string {
	t.Helper()
	return expr.ReplaceAllStringFunc(s, func(m string) string {
		switch e := expr.FindStringSubmatch(m)[1]; e {
		case "runner.temp":
			return j.temp
		case "github.workspace":
			return j.workspace
		default:
			t.Fatalf("the expression %s, which this test does not play: teach it", m)
			return ""
		}
	})
}

// fileCommands applies what a step appended to $GITHUB_PATH and
// $GITHUB_ENV (one directory, or one NAME=value, a line), as the runner
// does before the next step.
func (j *wfJob) fileCommands(t *testing.T, env []string) []string {
	t.Helper()
	for _, line := range lines(j.read(t, j.ghPath)) {
		env = prependPath(env, line)
	}
	for _, line := range lines(j.read(t, j.ghEnv)) {
		if strings.Contains(line, "<<") {
			t.Fatalf("$GITHUB_ENV: a multi-line value, which this test does not play: teach it")
		}
		env = append(env, line)
	}
	for _, f := range []string{j.ghPath, j.ghEnv} {
		if err := os.Truncate(f, 0); err != nil {
			t.Fatal(err)
		}
	}
	return env
}

func lines(s string) []string {
	var out []string
	for l := range strings.SplitSeq(s, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			out = append(out, l)
		}
	}
	return out
}

func prependPath(env []string, dir string) []string {
	env = slices.Clone(env)
	for i, kv := range env {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			env[i] = "PATH=" + dir + ":" + v
			return env
		}
	}
	return append(env, "PATH="+dir)
}

// copyTree copies the regular files of src into dst, each made by own.
func copyTree(t *testing.T, src, dst string, own func(*testing.T, string)) {
	t.Helper()
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		to := filepath.Join(dst, rel)
		switch {
		case d.IsDir():
			if err := os.MkdirAll(to, 0o755); err != nil {
				return err
			}
		case d.Type().IsRegular():
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			if err := os.WriteFile(to, b, 0o644); err != nil {
				return err
			}
		default:
			return nil
		}
		own(t, to)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// removeAll removes dir, the module cache's read-only directories
// included.
func removeAll(t *testing.T, dir string) {
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			os.Chmod(p, 0o755)
		}
		return nil
	})
	if err := os.RemoveAll(dir); err != nil {
		t.Error(err)
	}
}

// proxyVersion is the version the proxy serves this working tree as: the
// latest, since it is the only one.
const proxyVersion = "v0.0.0-workflowtest"

const modulePath = "github.com/nettrap/nettrap"

// makeProxy writes two module proxies (GOPROXY=file://…) into dir: this/,
// which serves this repository's working tree as the only version of
// github.com/nettrap/nettrap, and deps/, which serves the modules of its
// module graph from this machine's module cache (GOMODCACHE's
// cache/download is laid out as a proxy). Both are world-readable, for
// a user that is not root.
func makeProxy(t *testing.T, root, dir string) {
	t.Helper()
	v := filepath.Join(dir, "this", escapePath(modulePath), "@v")
	if err := os.MkdirAll(v, 0o755); err != nil {
		t.Fatal(err)
	}
	gomod, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	info, _ := json.Marshal(map[string]string{"Version": proxyVersion, "Time": time.Now().UTC().Format(time.RFC3339)})
	for name, data := range map[string][]byte{
		"list":                 []byte(proxyVersion + "\n"),
		proxyVersion + ".info": info,
		proxyVersion + ".mod":  gomod,
	} {
		if err := os.WriteFile(filepath.Join(v, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	writeModuleZip(t, root, filepath.Join(v, proxyVersion+".zip"))

	// The sandbox has no network: what nettrap's build needs must be in
	// this machine's module cache already.
	cmd := exec.Command("go", "list", "-deps", "./cmd/nettrap")
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOPROXY=off")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("the module cache lacks what nettrap's build needs (go mod download, outside the sandbox, fetches it): %v\n%s", err, out)
	}
	cmd = exec.Command("go", "mod", "graph")
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOPROXY=off")
	graph, err := cmd.Output()
	if err != nil {
		t.Fatalf("go mod graph: %v", err)
	}
	modcache, err := exec.Command("go", "env", "GOMODCACHE").Output()
	if err != nil {
		t.Fatalf("go env GOMODCACHE: %v", err)
	}
	cache := filepath.Join(strings.TrimSpace(string(modcache)), "cache", "download")
	seen := map[string]bool{}
	sc := bufio.NewScanner(bytes.NewReader(graph))
	for sc.Scan() {
		for _, mv := range strings.Fields(sc.Text()) {
			path, version, ok := strings.Cut(mv, "@")
			if !ok || seen[mv] {
				continue
			}
			seen[mv] = true
			from := filepath.Join(cache, escapePath(path), "@v")
			to := filepath.Join(dir, "deps", escapePath(path), "@v")
			for _, ext := range []string{".info", ".mod", ".zip", ".ziphash"} {
				name := escapePath(version) + ext
				b, err := os.ReadFile(filepath.Join(from, name))
				if err != nil {
					continue // not in the cache: not needed to build it here either
				}
				if err := os.MkdirAll(to, 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(to, name), b, 0o644); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
}

// escapePath is a module path or version as the module cache and proxies
// spell it: each upper-case letter as '!' and the letter in lower case.
func escapePath(s string) string {
	var b strings.Builder
	for _, r := range s {
		if 'A' <= r && r <= 'Z' {
			b.WriteByte('!')
			r += 'a' - 'A'
		}
		b.WriteRune(r)
	}
	return b.String()
}

// writeModuleZip writes the module zip of the working tree at root: every
// regular file but those of nested modules (a directory with a go.mod of
// its own) and of dot directories (.git), under module@version/.
func writeModuleZip(t *testing.T, root, dst string) {
	t.Helper()
	f, err := os.Create(dst)
	if err != nil {
		t.Fatal(err)
	}
	zw := zip.NewWriter(f)
	prefix := modulePath + "@" + proxyVersion + "/"
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if p == root {
				return nil
			}
			if strings.HasPrefix(d.Name(), ".") {
				return filepath.SkipDir
			}
			if _, err := os.Stat(filepath.Join(p, "go.mod")); err == nil {
				return filepath.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() {
			return nil
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		if rel == "nettrap" || strings.HasSuffix(rel, ".test") {
			return nil // a binary built in the checkout (.gitignore)
		}
		w, err := zw.Create(prefix + filepath.ToSlash(rel))
		if err != nil {
			return err
		}
		src, err := os.Open(p)
		if err != nil {
			return err
		}
		defer src.Close()
		_, err = io.Copy(w, src)
		return err
	})
	if err == nil {
		err = zw.Close()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatalf("module zip of %s: %v", root, err)
	}
}

// onlyJob is the workflow's one job.
func onlyJob(t *testing.T, w ghWorkflow) ghJob {
	t.Helper()
	if len(w.Jobs) != 1 {
		t.Fatalf("%s: %d jobs, want 1", workflowFile, len(w.Jobs))
	}
	for _, j := range w.Jobs {
		return j
	}
	return ghJob{}
}

func keysOf(m map[string]any) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}
