//go:build !linux

package natstest

import "syscall"

// procAttr: only Linux can tie the server's life to the test binary's; elsewhere Cleanup stops it.
func procAttr() *syscall.SysProcAttr { return nil }
