package dnssink_test

import (
	"fmt"
	"net"

	"golang.org/x/net/dns/dnsmessage"

	"github.com/nettrap/nettrap/dnssink"
)

// The supervisor's side: redirect a socket to the sink, learn its local
// address, Expect it, and let the target send.
func Example() {
	s, err := dnssink.Listen()
	if err != nil {
		fmt.Println(err)
		return
	}
	defer s.Close()

	// Stands for the target's socket, connected to the sink on its behalf.
	c, err := net.Dial("udp", s.Addr("udp", false).String())
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close()
	from := c.LocalAddr().(*net.UDPAddr).AddrPort()
	s.Expect("udp", from, func(q dnssink.Query) {
		fmt.Printf("nettrap: DNS lookup blocked: %s %s via 192.0.2.53:53\n", q.Type, q.Name)
	})
	defer s.Forget("udp", from)

	// The target's query, and the answer it gets.
	b := dnsmessage.NewBuilder(nil, dnsmessage.Header{ID: 42, RecursionDesired: true})
	b.StartQuestions()
	b.Question(dnsmessage.Question{Name: dnsmessage.MustNewName("_grpc_config.localhost."),
		Type: dnsmessage.TypeTXT, Class: dnsmessage.ClassINET})
	msg, _ := b.Finish()
	c.Write(msg)
	buf := make([]byte, 512)
	n, _ := c.Read(buf)
	var p dnsmessage.Parser
	h, _ := p.Start(buf[:n])
	fmt.Println(h.ID, h.RCode)
	// Output:
	// nettrap: DNS lookup blocked: TXT _grpc_config.localhost via 192.0.2.53:53
	// 42 RCodeRefused
}
