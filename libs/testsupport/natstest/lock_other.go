//go:build !(linux || darwin || freebsd || netbsd || openbsd)

package natstest

// lockFile does not lock here: parallel test binaries may each build the server, and the last rename wins.
func lockFile(string) (unlock func(), err error) { return func() {}, nil }
