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
