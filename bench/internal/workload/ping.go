package main

import (
	"encoding/binary"
	"fmt"
	"net"
	"slices"
	"time"

	"github.com/nettrap/nettrap/bench/internal/wire"
)

// udpping (issue 37, item 7) is a gossip library's ping in miniature: an
// unconnected UDP socket sends a datagram to a loopback peer in the same
// process (sendto with an address: the trapped call), the peer's
// goroutine answers it, and the sender's reader goroutine takes the
// answer. Each op times, with the monotonic clock of each goroutine,
// when the send was made and returned, when the peer read the datagram
// and when the answer was read. Under a supervisor the send returns only
// after the supervisor's answer to the kernel, while its datagram is
// already on its way: a test that takes its start time after the send
// can see the answer come first, a round trip of zero or less.
//
// The peer answers on a socket connected to the sender, a send without
// an address that no filter traps: the one trapped call is the ping.
// Everything is on 127.0.0.1, written with Go's net package as a Go test
// would, its goroutines woken by the runtime's netpoller.
func init() {
	ops["udpping"] = makeUDPPing
}

// figures is what an op measures beside its time: run resets it after
// the warm-up and adds it to the result after the timed loop.
type figures interface {
	reset()
	fill(*result)
}

// measures is the figures of the op made last, nil for an op that
// measures only its time.
var measures figures

// pingTimeout only stops a ping whose datagram was lost (nothing is lost
// on loopback with one ping in flight); it is not an assertion.
const pingTimeout = 10 * time.Second

type pingFigures struct {
	// Per ping, in ns: from before the send to the answer, from the
	// send's return to the answer, from the send's return to the peer's
	// read of the datagram. The last two are negative when the answer,
	// or the datagram, came before the send returned.
	beforeToAnswer, afterToAnswer, afterToArrival []int64
}

func (f *pingFigures) reset() {
	f.beforeToAnswer, f.afterToAnswer, f.afterToArrival = f.beforeToAnswer[:0], f.afterToAnswer[:0], f.afterToArrival[:0]
}

func (f *pingFigures) fill(r *result) {
	first := 0
	for _, d := range f.afterToAnswer {
		if d <= 0 {
			first++
		}
	}
	r.Ping = &wire.Ping{
		N:                  len(f.afterToAnswer),
		BeforeSendToAnswer: medianNs(f.beforeToAnswer),
		AfterSendToAnswer:  medianNs(f.afterToAnswer),
		AfterSendToArrival: medianNs(f.afterToArrival),
		AnswerFirst:        float64(first) / float64(max(1, len(f.afterToAnswer))),
	}
}

func medianNs(v []int64) float64 {
	if len(v) == 0 {
		return 0
	}
	c := slices.Clone(v)
	slices.Sort(c)
	if len(c)%2 == 1 {
		return float64(c[len(c)/2])
	}
	return float64(c[len(c)/2-1]+c[len(c)/2]) / 2
}

// stamp is a sequence number and when a goroutine read it.
type stamp struct {
	seq uint64
	at  time.Time
}

func makeUDPPing() (op, func(), error) {
	lo := &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)}
	sender, err := net.ListenUDP("udp4", lo)
	if err != nil {
		return nil, nil, err
	}
	// The peer's socket is connected to the sender (one trapped connect,
	// here): its answers are sends without an address.
	peer, err := net.DialUDP("udp4", lo, sender.LocalAddr().(*net.UDPAddr))
	if err != nil {
		sender.Close()
		return nil, nil, err
	}
	to := peer.LocalAddr().(*net.UDPAddr)
	arrivals, answers := make(chan stamp, 1), make(chan stamp, 1)
	go func() { // the peer: read, note, answer
		buf := make([]byte, 64)
		for {
			n, err := peer.Read(buf)
			at := time.Now()
			if err != nil {
				close(arrivals)
				return
			}
			peer.Write(buf[:n])
			arrivals <- stamp{binary.LittleEndian.Uint64(buf), at}
		}
	}()
	go func() { // the sender's reader: read the answer, note
		buf := make([]byte, 64)
		for {
			_, _, err := sender.ReadFromUDP(buf)
			at := time.Now()
			if err != nil {
				close(answers)
				return
			}
			answers <- stamp{binary.LittleEndian.Uint64(buf), at}
		}
	}()
	f := &pingFigures{}
	measures = f
	msg := make([]byte, 64)
	var seq uint64
	wait := func(ch <-chan stamp, what string) (time.Time, error) {
		select {
		case s, ok := <-ch:
			switch {
			case !ok:
				return time.Time{}, fmt.Errorf("ping %d: the %s's socket closed", seq, what)
			case s.seq != seq:
				return time.Time{}, fmt.Errorf("ping %d: the %s read ping %d", seq, what, s.seq)
			}
			return s.at, nil
		case <-time.After(pingTimeout):
			return time.Time{}, fmt.Errorf("ping %d: no %s within %v", seq, what, pingTimeout)
		}
	}
	return func() error {
			seq++
			binary.LittleEndian.PutUint64(msg, seq)
			before := time.Now()
			if _, err := sender.WriteToUDP(msg, to); err != nil {
				return err
			}
			after := time.Now()
			arrival, err := wait(arrivals, "peer")
			if err != nil {
				return err
			}
			answer, err := wait(answers, "answer")
			if err != nil {
				return err
			}
			f.beforeToAnswer = append(f.beforeToAnswer, int64(answer.Sub(before)))
			f.afterToAnswer = append(f.afterToAnswer, int64(answer.Sub(after)))
			f.afterToArrival = append(f.afterToArrival, int64(arrival.Sub(after)))
			return nil
		}, func() {
			sender.Close()
			peer.Close()
		}, nil
}
