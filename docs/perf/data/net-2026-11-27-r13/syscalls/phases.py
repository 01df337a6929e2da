import re,sys,collections
def phases(fn):
    cur=None; cnt=collections.Counter(); out={}
    for line in open(fn):
        m=re.match(r'(\d+)\s+(\w+)\(',line)
        if not m: continue
        sc=m.group(2)
        w=re.match(r'\d+\s+write\(1, "([a-z_]+ \d+)',line)
        if w:
            out[w.group(1)]=cnt; cnt=collections.Counter(); continue
        cnt[sc]+=1
    return out
a=phases(sys.argv[1]); b=phases(sys.argv[2])
for k in ["put_quiet 8","put_quiet 4096","get 8","get 4096","fetch_add 8","put_bw 16384","put_bw 32768"]:
    if k in a and k in b:
        sa=a[k]; sb=b[k]
        keys=sorted(set(sa)|set(sb), key=lambda x:-(sa[x]+sb[x]))[:8]
        print(k, "sym total",sum(sa.values()),"raw total",sum(sb.values()), " ".join("%s:%d/%d"%(x,sa[x],sb[x]) for x in keys))
