package natstest

import "syscall"

// procAttr makes the kernel kill the server when the test binary dies (a panic, a timeout, kill -9), so no
// nats-server outlives its test.
func procAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL} }
