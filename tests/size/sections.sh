#!/bin/sh
# Where the bytes of a size build go: every function and constant of an
# ELF built with -g, summed by the kctl.h section (the ">>tag" banner of
# the implementation) its definition is in; what is not kctl.h's (the
# program, libc, libgcc) is "other". `make size-sections` runs it on the
# minimal controller; the biggest symbols of each section follow the sums.
#   sh tests/size/sections.sh <nm> <elf> <kctl.h> [symbols per section]
nm=$1 elf=$2 hdr=$3 top=${4:-8}
impl=$(grep -n '^/\* =* IMPLEMENTATION' "$hdr" | head -n 1 | cut -d: -f1)
grep -n '^/\* -* >>[a-z]* ' "$hdr" | awk -F: -v impl="$impl" '$1 > impl {
    t = $2; sub(/.*>>/, "", t); sub(/ .*/, "", t); print $1, t }' > "$elf.sections"
"$nm" -l -S -t d "$elf" | awk '$3 ~ /^[tTrRdDbB]$/' |
awk -v sf="$elf.sections" -v top="$top" '
BEGIN { while ((getline l < sf) > 0) { split(l, p, " "); n++; line[n] = p[1]; tag[n] = p[2] } }
{
    size = $2 + 0; name = $4; s = "other"
    if (match($0, /kctl\.h:[0-9]+/)) {
        ln = substr($0, RSTART + 7, RLENGTH - 7) + 0
        s = "decl"
        for (i = 1; i <= n; i++) if (line[i] <= ln) s = tag[i]
    }
    sum[s] += size; all += size
    cnt[s]++; sym[s, cnt[s]] = sprintf("%7d %s", size, name)
}
END {
    for (s in sum) order[s] = sum[s]
    printf "%-12s %8s\n", "section", "bytes"
    while (1) {
        best = ""; for (s in order) if (best == "" || order[s] > order[best]) best = s
        if (best == "") break
        printf "%-12s %8d\n", best, sum[best]
        m = cnt[best]
        for (k = 1; k <= m; k++) v[k] = sym[best, k]
        for (a = 1; a <= m; a++) for (b = a + 1; b <= m; b++) if (v[b] + 0 > v[a] + 0) { t = v[a]; v[a] = v[b]; v[b] = t }
        for (k = 1; k <= m && k <= top; k++) printf "             %s\n", v[k]
        delete order[best]
    }
    printf "%-12s %8d\n", "all", all
}'
rm -f "$elf.sections"
