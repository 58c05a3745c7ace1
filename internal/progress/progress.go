// Package progress draws the one-line progress display that every dpmf
// command shows on a terminal: a status text or a bar, and the elapsed
// time, rewritten in place with a carriage return and erased when the work
// ends.
//
// The display stays silent for Options.Delay, so quick work prints
// nothing. Output meant for the terminal while the line is shown (a
// warning) goes through [Bar.Write], which erases the line first; the next
// tick draws it again below.
package progress

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"time"
)

// Options configures a display.
type Options struct {
	// Prefix starts the line, for example "mfsolve: ".
	Prefix string
	// Label names the work, for example "optimal R=800" (may be empty).
	Label string
	// Total is the number of units of work for a bar; 0 shows no bar.
	Total int
	// Delay is how long the work runs before the line first appears.
	Delay time.Duration
	// Interval is the redraw period; 0 means 200 ms.
	Interval time.Duration
}

// Bar is a running display. Its methods are safe for concurrent use.
type Bar struct {
	w     io.Writer
	opt   Options
	start time.Time

	mu     sync.Mutex
	done   int
	status string
	shown  bool // a line is on the terminal

	stop     chan struct{}
	finished chan struct{}
	once     sync.Once
}

// Start starts a display on w. Call Finish when the work ends.
func Start(w io.Writer, opt Options) *Bar {
	if opt.Interval <= 0 {
		opt.Interval = 200 * time.Millisecond
	}
	b := &Bar{w: w, opt: opt, start: time.Now(), stop: make(chan struct{}), finished: make(chan struct{})}
	go b.loop()
	return b
}

// Set records that done units of work are complete. A smaller value than
// one already recorded is ignored (workers may report out of order).
func (b *Bar) Set(done int) {
	b.mu.Lock()
	b.done = max(b.done, done)
	b.mu.Unlock()
}

// Status sets the status text, for example "iteration 42  gap 3.1e-08".
func (b *Bar) Status(s string) {
	b.mu.Lock()
	b.status = s
	b.mu.Unlock()
}

// loop draws the line after opt.Delay, then every opt.Interval, until
// Finish.
func (b *Bar) loop() {
	defer close(b.finished)
	timer := time.NewTimer(b.opt.Delay)
	defer timer.Stop()
	for {
		select {
		case <-b.stop:
			return
		case <-timer.C:
		}
		b.mu.Lock()
		fmt.Fprintf(b.w, "\r%s\x1b[K", Text(b.opt, b.done, b.status, time.Since(b.start)))
		b.shown = true
		b.mu.Unlock()
		timer.Reset(b.opt.Interval)
	}
}

// Write writes p, other output for the terminal such as a warning, after
// erasing the line.
func (b *Bar) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.erase()
	return b.w.Write(p)
}

// erase erases the line if it is shown; the caller holds b.mu.
func (b *Bar) erase() {
	if b.shown {
		fmt.Fprint(b.w, "\r\x1b[K")
		b.shown = false
	}
}

// Finish stops the display and erases the line. Calling it again does
// nothing.
func (b *Bar) Finish() {
	b.once.Do(func() {
		close(b.stop)
		<-b.finished
		b.mu.Lock()
		defer b.mu.Unlock()
		b.erase()
	})
}

// barWidth is the number of cells of a bar.
const barWidth = 30

// Text is the content of the line: prefix and label, a bar of done out of
// opt.Total units when Total > 0, the status (or "computing" when there is
// neither a bar nor a status) and the elapsed seconds, separated by two
// spaces.
func Text(opt Options, done int, status string, elapsed time.Duration) string {
	parts := []string{strings.TrimSpace(opt.Prefix + opt.Label)}
	if opt.Total > 0 {
		frac := min(1, float64(done)/float64(opt.Total))
		n := int(frac * barWidth)
		parts = append(parts, fmt.Sprintf("[%s%s] %3.0f%%", strings.Repeat("#", n), strings.Repeat(".", barWidth-n), 100*frac))
	}
	switch {
	case status != "":
		parts = append(parts, status)
	case opt.Total <= 0:
		parts = append(parts, "computing")
	}
	parts = append(parts, fmt.Sprintf("%.1f s", elapsed.Seconds()))
	return strings.Join(parts, "  ")
}
