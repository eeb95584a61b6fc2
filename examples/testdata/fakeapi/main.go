// Command fakeapi stands in for the forecast API in scripts/demo.sh. It runs
// inside the demo's private network namespace, on the documentation address
// the weather client uses, and logs every request it gets: what nettrap let
// through. It lives under testdata so that ./... leaves it out.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"sync"
)

func main() {
	addr := flag.String("addr", "203.0.113.80:80", "listen `address`")
	logPath := flag.String("log", "", "append one line per request to `FILE`")
	ready := flag.String("ready", "", "create `FILE` once listening")
	flag.Parse()
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		log.Fatal(err)
	}
	out := os.Stdout
	if *logPath != "" {
		if out, err = os.OpenFile(*logPath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644); err != nil {
			log.Fatal(err)
		}
	}
	if *ready != "" {
		if err := os.WriteFile(*ready, nil, 0o644); err != nil {
			log.Fatal(err)
		}
	}
	var mu sync.Mutex
	log.Fatal(http.Serve(ln, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		fmt.Fprintf(out, "%s %s from %s\n", r.Method, r.URL, r.RemoteAddr)
		mu.Unlock()
		city := r.URL.Query().Get("city")
		json.NewEncoder(w).Encode(map[string]any{"city": city, "temp_c": 4.0, "summary": "rain"})
	})))
}
