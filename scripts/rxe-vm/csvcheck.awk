# csvcheck.awk: checks the rows of a kvtier CSV in the guest (busybox awk).
#
#   awk -f csvcheck.awk -v all="status=ok,verified=true" -v min=4 FILE
#       every row has these column values, and there are at least min rows
#   awk -f csvcheck.awk -v any="status=error" FILE
#       at least one row has these values
#
# Prints one line saying what it found; exits 0 when the check holds.
# Fields may be quoted ("a,b", "say ""x"""); a row is one line.

function split_csv(line, out,    n, i, c, f, q) {
	n = 0; f = ""; q = 0
	for (i = 1; i <= length(line); i++) {
		c = substr(line, i, 1)
		if (q) {
			if (c == "\"") {
				if (substr(line, i + 1, 1) == "\"") { f = f "\""; i++ } else q = 0
			} else f = f c
		} else if (c == "\"") q = 1
		else if (c == ",") { out[++n] = f; f = "" }
		else f = f c
	}
	out[++n] = f
	return n
}

# match_all reports "" when row r has every name=value of spec, else the
# first mismatch as name=got.
function mismatch(spec,    pairs, np, i, kv, col) {
	np = split(spec, pairs, ",")
	for (i = 1; i <= np; i++) {
		split(pairs[i], kv, "=")
		if (!(kv[1] in idx)) return kv[1] " (no such column)"
		col = idx[kv[1]]
		if (row[col] != kv[2]) return kv[1] "=" row[col]
	}
	return ""
}

BEGIN { rows = 0; good = 0; bad = "" }
{ sub(/\r$/, "") }
NR == 1 {
	n = split_csv($0, hdr)
	for (i = 1; i <= n; i++) idx[hdr[i]] = i
	next
}
$0 == "" { next }
{
	delete row
	split_csv($0, row)
	rows++
	if (all != "") {
		m = mismatch(all)
		if (m == "") good++
		else if (bad == "") bad = "row " rows ": " m " (reason: " row[idx["reason"]] ")"
	}
	if (any != "" && mismatch(any) == "") good++
}
END {
	if (all != "") {
		if (bad != "") { print FILENAME ": " bad; exit 1 }
		if (rows < min + 0) { print FILENAME ": " rows " rows, want at least " min; exit 1 }
		print FILENAME ": " rows " rows, all " all
		exit 0
	}
	if (good == 0) { print FILENAME ": " rows " rows, none with " any; exit 1 }
	print FILENAME ": " good " of " rows " rows with " any
	exit 0
}
