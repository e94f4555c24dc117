# batch.awk: what the latest iteration of `xflowtop -b` output says, for
# dom0-run.sh's waits.  Prints
#   iteration N
#   hops SUM        (the COUNTs of HOPS rows with linuxU: at both ends)
#   domain ID NAME STATE   (one per DOMAINS row)
# The DOMAINS columns are found by their headers, so that columns may be
# added or moved without breaking the test.  A partly written last
# iteration can only under-report, which the waits tolerate.
/^xflowtop - / { it++; hops = 0; nd = 0; sect = ""; next }
/^HOPS/ { sect = "hops"; hdr = 1; next }
/^DOMAINS/ { sect = "doms"; hdr = 1; next }
/^[ \t]*$/ { sect = ""; next }
sect == "hops" && hdr { hdr = 0; next }
sect == "hops" && $1 ~ /^linuxU:/ && $2 ~ /^linuxU:/ && $3 ~ /^[0-9]+$/ { hops += $3 }
sect == "doms" && hdr {
	cid = cname = cstate = 0
	for (i = 1; i <= NF; i++) {
		if ($i == "ID") cid = i
		if ($i == "NAME") cname = i
		if ($i == "STATE") cstate = i
	}
	hdr = 0
	next
}
sect == "doms" && cid && cname && cstate { dom[++nd] = $cid " " $cname " " $cstate }
END {
	print "iteration", it + 0
	print "hops", hops + 0
	for (i = 1; i <= nd; i++) print "domain", dom[i]
}
