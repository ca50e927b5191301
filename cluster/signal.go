package cluster

import (
	"io"
	"os"
	"os/signal"
	"sync"
	"syscall"
)

// CloseOnSignal closes c when the process gets SIGINT (Ctrl-C), SIGTERM or
// SIGHUP, then calls then(sig). With then nil it ends the process by the
// same signal, default handling restored, so the exit status says what
// happened. stop undoes the handler; call it when c is closed normally.
func CloseOnSignal(c io.Closer, then func(os.Signal)) (stop func()) {
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	quit := make(chan struct{})
	var once sync.Once
	go func() {
		select {
		case sig := <-ch:
			_ = c.Close()
			if then != nil {
				then(sig)
				return
			}
			signal.Reset(sig)
			if s, ok := sig.(syscall.Signal); ok {
				_ = syscall.Kill(os.Getpid(), s)
			}
		case <-quit:
		}
	}()
	return func() {
		once.Do(func() {
			signal.Stop(ch)
			close(quit)
		})
	}
}
