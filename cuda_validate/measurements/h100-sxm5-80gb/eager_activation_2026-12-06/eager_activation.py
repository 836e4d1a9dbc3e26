import json,sys,torch
import torch.nn.functional as F
I=14336
def T(m):
    g,u=torch.randn(m,2*I,device="cuda",dtype=torch.bfloat16).chunk(2,dim=-1)
    return g,u,F.silu(g)
def tm(fn):
    fn();torch.cuda.synchronize();o=[]
    for _ in range(3):
        a,b=torch.cuda.Event(enable_timing=True),torch.cuda.Event(enable_timing=True)
        a.record()
        for _ in range(20): fn()
        b.record();torch.cuda.synchronize();o.append(a.elapsed_time(b)*1e-3/20)
    return o
R=[1,16,4096,16384]
if sys.argv[1]=="once":
    for m in R:
        g,u,s=T(m);F.silu(g);s*u;torch.cuda.synchronize()
else:
    rows=[]
    for m in R:
        g,u,s=T(m);rows.append({"rows":m,"silu_s":tm(lambda:F.silu(g)),"mul_s":tm(lambda:s*u)});print(rows[-1],flush=True)
    json.dump({"device":torch.cuda.get_device_name(),"torch":torch.__version__,"rows":rows},open(sys.argv[1],"w"),indent=1)
