# What 300 slow HTTP bodies and 20 large RESP commands cost one `locknode serve`
# (bench/results/net-limits.md). Usage: python3 net-limits-rss.py BASE_BINARY NEW_BINARY
import socket, subprocess, sys, time, os, re, tempfile, urllib.request, shutil
def free():
    s=socket.socket(); s.bind(('127.0.0.1',0)); p=s.getsockname()[1]; s.close(); return p
def rss(pid):
    for l in open(f'/proc/{pid}/status'):
        if l.startswith('VmRSS'): return int(l.split()[1])//1024
def heap(h):
    m=urllib.request.urlopen(f'http://{h}/metrics').read().decode()
    g=lambda n: int(float(re.search(r'^'+n+r' (\S+)',m,re.M).group(1)))//(1<<20)
    return g('go_memstats_heap_inuse_bytes')
def run(binary, extra, scenario):
    d=tempfile.mkdtemp(); hp,rp,fp=free(),free(),free()
    p=subprocess.Popen([binary,'serve','--id','n1','--data',d,'--bootstrap','--raft-addr',f'127.0.0.1:{fp}','--http-addr',f'127.0.0.1:{hp}','--resp-addr',f'127.0.0.1:{rp}','--log-level','error','--gc-percent','100']+extra,stdout=subprocess.PIPE,stderr=subprocess.DEVNULL)
    p.stdout.readline()
    h=f'127.0.0.1:{hp}'
    for _ in range(100):
        try:
            urllib.request.urlopen(f'http://{h}/v1/status'); break
        except Exception: time.sleep(0.1)
    time.sleep(1)
    r0,h0=rss(p.pid),heap(h)
    conns=[]
    if scenario=='http':
        for i in range(300):
            s=socket.create_connection(('127.0.0.1',hp))
            s.sendall(b'POST /v1/locks/acquire HTTP/1.1\r\nHost: x\r\nContent-Length: 1048576\r\n\r\n{')
            conns.append(s)
        time.sleep(3)
    else:
        part=b'x'*(15<<20)
        cmd=b'*4\r\n$5\r\nXLARG\r\n'+b''.join(b'$%d\r\n%s\r\n'%(len(part),part) for _ in range(3))
        for i in range(20):
            s=socket.create_connection(('127.0.0.1',rp)); s.sendall(cmd); s.recv(100); conns.append(s)
        time.sleep(3)
    r1,h1=rss(p.pid),heap(h)
    if scenario=='resp' and os.environ.get('IDLE_WAIT'):
        time.sleep(int(os.environ['IDLE_WAIT']))
        r2,h2=rss(p.pid),heap(h)
        print(f'  after {os.environ["IDLE_WAIT"]} s idle: RSS {r2} MB, heap in use {h2} MiB', flush=True)
    ok=urllib.request.urlopen(f'http://{h}/v1/status').status
    print(f'{os.path.basename(binary)} {scenario}: RSS {r0} -> {r1} MB (+{r1-r0}), heap in use {h0} -> {h1} MiB (+{h1-h0}); status after: {ok}', flush=True)
    for s in conns: s.close()
    p.terminate(); p.wait(); shutil.rmtree(d)
for sc in ['http','resp']:
    for i, b in enumerate(sys.argv[1:3]):
        # the new binary's body timeout is lifted so the connections stay open while measured
        run(b, ['--http-body-timeout','60s'] if i == 1 else [], sc)
