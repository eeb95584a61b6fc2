package fakehost

import (
	"golang.org/x/net/dns/dnsmessage"
)

// answerDNS parses msg as a DNS query and builds the fake answer. ok is
// false when msg is not a query; name is the first question's name.
func answerDNS(msg []byte) (resp []byte, name string, ok bool) {
	var p dnsmessage.Parser
	hdr, err := p.Start(msg)
	if err != nil || hdr.Response {
		return nil, "", false
	}
	q, err := p.Question()
	if err != nil {
		return nil, "", false
	}
	b := dnsmessage.NewBuilder(nil, dnsmessage.Header{
		ID: hdr.ID, Response: true, Authoritative: true, RecursionDesired: hdr.RecursionDesired,
		RecursionAvailable: true,
	})
	b.EnableCompression()
	if err := b.StartQuestions(); err != nil {
		return nil, "", false
	}
	if err := b.Question(q); err != nil {
		return nil, "", false
	}
	if err := b.StartAnswers(); err != nil {
		return nil, "", false
	}
	if q.Type == dnsmessage.TypeA && q.Class == dnsmessage.ClassINET {
		rh := dnsmessage.ResourceHeader{Name: q.Name, Type: dnsmessage.TypeA, Class: dnsmessage.ClassINET, TTL: 60}
		if err := b.AResource(rh, dnsmessage.AResource{A: DNSAnswerV4.As4()}); err != nil {
			return nil, "", false
		}
	}
	resp, err = b.Finish()
	if err != nil {
		return nil, "", false
	}
	return resp, q.Name.String(), true
}
