package main

import (
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/dpmf/dpmf/factorize"
)

// progressLine shows the state of a running solve on one terminal line,
// rewritten in place with a carriage return. It stays silent for the first
// delay, so quick runs print nothing, and erases itself when stopped.
type progressLine struct {
	w        io.Writer
	label    string // for example "optimal R=800"
	start    time.Time
	delay    time.Duration
	interval time.Duration

	mu    sync.Mutex
	last  factorize.Progress
	have  bool // last holds a report
	shown bool // a line is on the terminal

	stop chan struct{}
	done chan struct{}
}

// startProgress starts a progress line on w, rewritten every interval
// after delay has passed. Call stop when the solve ends.
func startProgress(w io.Writer, label string, delay, interval time.Duration) *progressLine {
	p := &progressLine{
		w: w, label: label, start: time.Now(), delay: delay, interval: interval,
		stop: make(chan struct{}), done: make(chan struct{}),
	}
	go p.loop()
	return p
}

// update records a solver report. It is the solver's Options.Progress.
func (p *progressLine) update(pr factorize.Progress) {
	p.mu.Lock()
	p.last, p.have = pr, true
	p.mu.Unlock()
}

func (p *progressLine) loop() {
	defer close(p.done)
	timer := time.NewTimer(p.delay)
	defer timer.Stop()
	select {
	case <-p.stop:
		return
	case <-timer.C:
	}
	tick := time.NewTicker(p.interval)
	defer tick.Stop()
	for {
		p.draw()
		select {
		case <-p.stop:
			return
		case <-tick.C:
		}
	}
}

// draw rewrites the line.
func (p *progressLine) draw() {
	p.mu.Lock()
	defer p.mu.Unlock()
	fmt.Fprintf(p.w, "\r%s\x1b[K", progressText(p.label, p.last, p.have, time.Since(p.start)))
	p.shown = true
}

// Write writes p, other output for the terminal such as a warning, after
// erasing the progress line; the next tick draws it again below.
func (p *progressLine) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.shown {
		fmt.Fprint(p.w, "\r\x1b[K")
		p.shown = false
	}
	return p.w.Write(b)
}

// finish stops the line and erases it from the terminal.
func (p *progressLine) finish() {
	close(p.stop)
	<-p.done
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.shown {
		fmt.Fprint(p.w, "\r\x1b[K")
	}
}

// progressText is the content of the progress line: the iteration and
// the certified gap against its target once the solver has reported, and
// the elapsed time.
func progressText(label string, pr factorize.Progress, have bool, elapsed time.Duration) string {
	s := "mfsolve: " + label
	if have {
		s += fmt.Sprintf("  iteration %d  gap %.2e (target %.0e)", pr.Iter, pr.Gap, pr.Tol)
	} else {
		s += "  computing"
	}
	return s + fmt.Sprintf("  %.1f s", elapsed.Seconds())
}
