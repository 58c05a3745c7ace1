package main

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// progressBar draws "ofl: [#####.....]  45% 0:12" on a terminal, redrawn
// every 200 ms by its own goroutine from a counter the workers update.
type progressBar struct {
	w     io.Writer
	total int
	done  atomic.Int64
	start time.Time
	stop  chan struct{}
	wg    sync.WaitGroup
}

// startProgress starts a bar for total units of work.
func startProgress(w io.Writer, total int) *progressBar {
	b := &progressBar{w: w, total: total, start: time.Now(), stop: make(chan struct{})}
	b.wg.Go(func() {
		t := time.NewTicker(200 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-b.stop:
				return
			case <-t.C:
				b.draw()
			}
		}
	})
	return b
}

// update records the work done; safe for concurrent use.
func (b *progressBar) update(done, _ int) {
	for {
		old := b.done.Load()
		if int64(done) <= old || b.done.CompareAndSwap(old, int64(done)) {
			return
		}
	}
}

func (b *progressBar) draw() {
	const width = 30
	done := int(b.done.Load())
	frac := float64(done) / float64(max(b.total, 1))
	n := int(frac * width)
	el := time.Since(b.start).Round(time.Second)
	fmt.Fprintf(b.w, "\rofl: [%s%s] %3.0f%% %v", strings.Repeat("#", n), strings.Repeat(".", width-n), 100*frac, el)
}

// finish stops the bar and erases its line.
func (b *progressBar) finish() {
	close(b.stop)
	b.wg.Wait()
	fmt.Fprint(b.w, "\r\033[K")
}
