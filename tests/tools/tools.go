//go:build tools

// The Go programs the tests run, pinned by go.mod and go.sum.
package tools

import _ "github.com/summerwind/h2spec/cmd/h2spec"
