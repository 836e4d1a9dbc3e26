# probe7, finding 3: a KeyboardInterrupt from an iosim call made through eval()/exec(), caught,
# leaves the interpreter to die by SIGINT at exit (status 130) although everything after it runs.
# PYTHONPATH=/work/probe7_bin/python python3 tests/probe_fresh7/repro_sigint_exit.py; echo $?
import sys, time, os, signal, threading
import iosim
def fire():
    time.sleep(1.0)
    os.kill(os.getpid(), signal.SIGINT)
threading.Thread(target=fire, daemon=True).start()
try:
    eval("iosim.run(seq=65536, batch=32, heads=32, exact=True)")
except KeyboardInterrupt:
    print("KBI caught", flush=True)
try:
    time.sleep(1)
    print("slept fine", flush=True)
except KeyboardInterrupt:
    print("SECOND KeyboardInterrupt during sleep", flush=True)
r = iosim.run(seq=128)
print("next call ok", r["time_s"], flush=True)
