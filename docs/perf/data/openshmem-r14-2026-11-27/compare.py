import re, sys, statistics
cur=None; rows=[]
for line in open(sys.argv[1]):
    m=re.match(r'#### (\w+), (\d) PEs',line)
    if m: cur=(m.group(1),m.group(2)); continue
    m=re.match(r'\|\s*([-\d]+)\s*\|\s*([\d.]+) \[[^\]]*\]\s*\|\s*([\d.]+) \[[^\]]*\]\s*\|\s*([\d.]+) \[',line)
    if m and cur: rows.append((cur,m.group(1),float(m.group(2)),float(m.group(4)),float(m.group(3))))  # new, old, omp
tb_new=tb_old=0
for key in sorted(set(r[0] for r in rows)):
    rs=[r for r in rows if r[0]==key]
    small=[r for r in rs if r[1]=='-' or int(r[1])<=1024]
    ratio=[r[2]/r[3] for r in small]
    bn=[r[1] for r in rs if r[2]>=r[4]]; bo=[r[1] for r in rs if r[3]>=r[4]]
    tb_new+=len(bn); tb_old+=len(bo)
    print(key, "<=1KiB new/old median %.3f [%.2f-%.2f]"%(statistics.median(ratio),min(ratio),max(ratio)), "behind omp new:",bn, "old:",bo)
print("cells",len(rows),"behind new",tb_new,"old",tb_old)
