//go:build !amd64 || purego

package linalg

var dot = dotGo
