//go:build !unix

package main

import "os/exec"

// ownProcessGroup leaves cmd as it is: without process groups a cancelled
// context kills the launcher, and the command that it runs may outlive it.
func ownProcessGroup(*exec.Cmd) {}
