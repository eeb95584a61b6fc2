// Command mobyprofile prints Docker's default seccomp profile as JSON, the
// profile dockerd applies when a container names none (moby/profiles).
package main

import (
	"encoding/json"
	"fmt"
	"os"

	"github.com/moby/profiles/seccomp"
)

func main() {
	out, err := json.MarshalIndent(seccomp.DefaultProfile(), "", "\t")
	if err != nil {
		fmt.Fprintln(os.Stderr, "mobyprofile:", err)
		os.Exit(1)
	}
	fmt.Println(string(out))
}
