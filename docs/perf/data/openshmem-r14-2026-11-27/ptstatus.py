import re,sys
num=r'([\d.]+|-)'
def rows(path):
    """(benchmark:variant, PEs), size, three columns' medians, higher-is-better: a row per cell."""
    cur=None; higher=False; out=[]
    for line in open(path):
        m=re.match(r'#### (\S+), (\d) PEs \((.*)\)',line)
        if m: cur=(m.group(1),m.group(2)); higher='higher' in m.group(3); continue
        m=re.match(r'\|\s*([^|]+?)\s*\|\s*'+num+r'[^|]*\|\s*'+num+r'[^|]*\|\s*'+num,line)
        if m and cur and m.group(1)!='size' and not m.group(1).startswith('-'):
            def f(x): return None if x=='-' else float(x)
            out.append((cur,m.group(1),f(m.group(2)),f(m.group(3)),f(m.group(4)),higher))
    return out
if __name__=='__main__':
    behind=[];over=[];n=0;nomp=0
    for (k,sz,s,p,o,h) in rows(sys.argv[1]):
        if s is None: continue
        n+=1
        if o is not None:
            nomp+=1
            if (s<=o if h else s>=o) and not (s==o==0): behind.append((k,sz,s,o))
        if p is not None and p>0 and (s<p/1.1 if h else s>1.1*p) and abs(s-p)>0.011: over.append((k,sz,s,p))
    print("cells",n,"with Open MPI",nomp,"behind or tied",len(behind))
    for b in behind: print("  behind",b)
    print("over 10% of pinned",len(over))
    for b in over: print("  pinned",b)
