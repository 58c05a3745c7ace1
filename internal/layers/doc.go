// Package layers holds the test that keeps dpmf's imports pointing one
// way, as docs/architecture.md ("Layering") draws them. It has no code.
package layers
