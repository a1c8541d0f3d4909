package trace

// splitCSV splits one CSV line (RFC 4180 without line breaks inside quoted
// fields) into fields, appending to fields[:0] and offs[:0] the fields and
// the 0-based byte offset where each starts. Unquoted fields are trimmed of
// spaces and tabs. A quoted field may hold commas and doubled quotes ("");
// when it holds a doubled quote its text is unescaped into scratch, whose
// capacity the caller keeps ≥ len(line) so that earlier fields stay valid.
// A field that opens a quote and does not close it, or text after a closing
// quote, is an error at that field.
func splitCSV(line []byte, fields [][]byte, offs []int, scratch []byte) ([][]byte, []int, rowErr) {
	fields, offs = fields[:0], offs[:0]
	scratch = scratch[:0]
	i := 0
	for {
		// Skip leading blanks.
		start := i
		for i < len(line) && (line[i] == ' ' || line[i] == '\t') {
			i++
		}
		if i < len(line) && line[i] == '"' {
			q := i
			i++
			begin := i
			escaped := false
			for {
				if i >= len(line) {
					return fields, offs, bad(q+1, "", "quoted field not closed (line breaks inside quotes are not supported)")
				}
				if line[i] == '"' {
					if i+1 < len(line) && line[i+1] == '"' {
						escaped = true
						i += 2
						continue
					}
					break
				}
				i++
			}
			f := line[begin:i]
			if escaped {
				n := len(scratch)
				for j := 0; j < len(f); j++ {
					scratch = append(scratch, f[j])
					if f[j] == '"' {
						j++ // skip the second quote of the pair
					}
				}
				f = scratch[n:]
			}
			i++ // past the closing quote
			for i < len(line) && (line[i] == ' ' || line[i] == '\t') {
				i++
			}
			if i < len(line) && line[i] != ',' {
				return fields, offs, bad(i+1, "", "text after a closing quote")
			}
			fields = append(fields, f)
			offs = append(offs, q)
		} else {
			j := i
			for j < len(line) && line[j] != ',' {
				if line[j] == '"' {
					return fields, offs, bad(j+1, "", "quote inside an unquoted field")
				}
				j++
			}
			e := j
			for e > i && (line[e-1] == ' ' || line[e-1] == '\t') {
				e--
			}
			fields = append(fields, line[i:e])
			if i == len(line) || i == j { // empty field: point at where it would be
				i = start
			}
			offs = append(offs, i)
			i = j
		}
		if i >= len(line) {
			return fields, offs, rowErr{}
		}
		i++ // past the comma
	}
}
