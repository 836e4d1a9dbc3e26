set -x
nvidia-smi; nvidia-smi -q -d CLOCK | head -60
nvcc -O2 -arch=sm_90 -o /tmp/dq cuda_validate/device_query.cu && /tmp/dq | tee $OUT/device_query.json
which ncu; ncu --version
ls /usr/include | grep -iE "CLI|doctest|eigen|fmt|nlohmann|yaml" ; ls /usr/local/include | head
python3 -c "import torch; print(torch.__version__, torch.cuda.get_device_name(), torch.backends.cuda.flash_sdp_enabled())"
ls /usr/local/cuda/extras/CUPTI/samples 2>/dev/null | head; ls /usr/local/cuda/include | grep -i cupti | head -30
ls /usr/local/cuda/lib64 | grep -iE "cupti|nvperf"
cmake --version | head -1; nproc
