// Package archtest holds tests, and nothing else, that guard the shape of
// the module: which packages may import which (arch_test.go) and that the
// exported API is documented (doc_test.go). It owns no code that other
// packages use.
package archtest
