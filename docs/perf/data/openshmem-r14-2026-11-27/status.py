import re,sys
cur=None; rows=[]
for line in open(sys.argv[1]):
    m=re.match(r'#### (\w+), (\d) PEs',line)
    if m: cur=(m.group(1),m.group(2)); continue
    m=re.match(r'\|\s*([-\d]+)\s*\|\s*([\d.]+) \[[^\]]*\]\s*\|\s*([\d.]+) \[[^\]]*\]\s*\|\s*([\d.]+) \[',line)
    if m and cur: rows.append((cur,m.group(1),float(m.group(2)),float(m.group(3)),float(m.group(4))))
behind=[r for r in rows if r[2]>=r[4]]
over=[r for r in rows if r[2]>1.1*r[3]]
print("cells",len(rows),"behind omp",len(behind)); [print(" ",r) for r in behind]
print("over 1.1x pinned",len(over)); [print(" ",r) for r in over]
