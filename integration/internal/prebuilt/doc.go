// Package prebuilt is the integration tests' one switch for programs built
// elsewhere: with NETTRAP_TEST_PREBUILT=DIR set, victimbuild (the victim,
// escapee, forgehub, nettrap), the lab's C programs (escape32, holder,
// parentlisten, optflip, swapper) and netsem's (netsem, nopidfd) are taken
// from DIR, by their base names, and so are the go command's test2json
// and the fixture module's test binaries (DIR/fixtures/PKG.test), instead
// of being built with the go command or gcc at test time.
//
// It exists for machines without a toolchain: scripts/kernels.sh runs a cut
// of the integration tests in QEMU guests that have neither go nor gcc, and
// cross-builds DIR for each guest's architecture on the host. A program
// missing from DIR is an error that names it, which the callers make a
// test failure: a test never skips because a prebuilt directory is
// incomplete (that would hide a broken build script).
package prebuilt
