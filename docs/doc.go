// Package docs holds nettrap's reference pages, the Markdown files beside
// this one that the README links to: flags, what is checked, tests, the
// audit trail, the threat model, engines, the test cache, known limits,
// performance and development.
//
// It has no code. Its test reads README.md and every docs/*.md and checks
// every relative link: the file it names must exist, and an anchor
// (#...) must be the slug of a heading in the target, made as GitHub makes
// it (lowercase; letters, digits, '-' and '_' kept, spaces turned into '-',
// everything else dropped; a repeated heading gets -1, -2, ...). It also
// checks that the README links to every page, that every page opens with
// the paragraph that says what it is for, that no page cites anything
// outside the repository (a path that climbs out of it, a folder beside
// it), and that development.md's package map has a row for every package
// of the module and none for a directory that is gone.
package docs
