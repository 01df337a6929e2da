# A/B of an osu-pt run with OSU_IMPLS="symheap oshmem" and OSU_BASE: columns symheap, oshmem, base.
# Lists the cells where the change (symheap) or the base is behind Open MPI, and the change over the base.
import re, sys, statistics
cur=None; higher=False; rows=[]
num=r'([\d.]+|-)'
for line in open(sys.argv[1]):
    m=re.match(r'#### (\S+), (\d) PEs \((.*)\)',line)
    if m: cur=(m.group(1),m.group(2)); higher='higher' in m.group(3); continue
    m=re.match(r'\|\s*([^|]+?)\s*\|\s*'+num+r'[^|]*\|\s*'+num+r'[^|]*\|\s*'+num,line)
    if m and cur and m.group(1)!='size' and not m.group(1).startswith('-'):
        f=lambda x: None if x=='-' else float(x)
        rows.append((cur,m.group(1),f(m.group(2)),f(m.group(3)),f(m.group(4)),higher))
def behind(v,o,h): return v is not None and o is not None and (v<=o if h else v>=o) and not (v==o==0)
bn=[r for r in rows if behind(r[2],r[3],r[5])]; bb=[r for r in rows if behind(r[4],r[3],r[5])]
print("cells",len(rows),"behind Open MPI: change",len(bn),"base",len(bb))
for r in bn: print("  change behind",r[0],r[1],"change",r[2],"omp",r[3],"base",r[4])
for r in bb: print("  base behind",r[0],r[1],"base",r[4],"omp",r[3])
big=[r for r in rows if r[2] and r[4] and r[1].isdigit() and int(r[1])>=16384]
for key in sorted(set(r[0] for r in big)):
    rs=[r for r in big if r[0]==key]
    ratio=[(r[2]/r[4] if r[5] else r[4]/r[2]) for r in rs]
    print(key,">=16KiB change speed over base: median %.2f [%.2f-%.2f]"%(statistics.median(ratio),min(ratio),max(ratio)))
