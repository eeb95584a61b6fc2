// Command withcgo is a main package that uses cgo.
package main

// #include <stdlib.h>
import "C"

import "fmt"

func abs(x int) int { return int(C.abs(C.int(x))) }

func main() { fmt.Println(abs(-2)) }
