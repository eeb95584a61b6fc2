// Command plain is a main package with tests, as cmd/ packages have:
// its test binary's build info names the package without ".test".
package main

import "fmt"

func add(a, b int) int { return a + b }

func main() { fmt.Println(add(1, 2)) }
