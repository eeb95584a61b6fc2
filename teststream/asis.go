package teststream

// A stream read with FramingAny whose framing lines come without the
// marker is already in the form the user asked for: the user's own
// -test.v=true or -test.v=false took effect. The Renderer then writes it
// as it is, whatever its Mode, and only works the verdicts in.

// latchAsIs switches r to writing the stream as it is at its first
// framing line without the marker. Called with r.mu held.
func (r *Renderer) latchAsIs(e *Event) {
	if !r.asIs && !e.Framed && e.Kind != KindOutput && e.Kind != kindVerdict {
		r.asIs = true
	}
}

// renderAsIs writes an event of an unmarked stream: the --- line of a
// failed test and the final line turned into FAIL, everything else as
// read.
func (r *Renderer) renderAsIs(e *Event) {
	switch e.Kind {
	case KindEnd:
		r.writeBytes(r.endLine(e, e.Raw))
		if e.Indent == 0 {
			r.vLast = e.Test // the chatty printer names the test it reports
		}
	case KindFinal:
		r.writeBytes(r.finalLine(e))
	case KindRun, KindPause, KindCont, KindName, KindAttr, KindArtifacts:
		r.writeBytes(e.Raw)
		r.vLast = e.Test
	default:
		r.writeBytes(e.Raw)
	}
}

// writeAsIsInjection writes a verdict line into an unmarked stream. Under
// a test other than the one the binary named last it goes under a
// === NAME line, and a second one gives the output that follows back to
// the test it belongs to, as the binary itself would have named it.
func (r *Renderer) writeAsIsInjection(in injection, indent string, force bool) {
	if !r.atStart && force {
		r.write("\n")
	}
	if in.test == "" || in.test == r.vLast {
		r.write(verdictText(in.line, indent))
		return
	}
	r.write("=== NAME  " + in.test + "\n")
	r.write(verdictText(in.line, indent))
	if r.vLast != "" {
		r.write("=== NAME  " + r.vLast + "\n")
	}
}
