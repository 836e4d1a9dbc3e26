# Regenerates tests/data/bad_profiles/*.yaml and EXPECTED.tsv from one valid base profile with
# one mistake each: python3 tests/data/bad_profiles/make_corpus.py. Line numbers in the expected
# messages are computed from the generated files (@L[text]@ = line of the first line holding text,
# @L2[text]@ = of the second).
import os, re
OUT = os.path.dirname(os.path.abspath(__file__))
BASE = '''# A valid profile with one deliberate mistake (see EXPECTED.tsv for the message it must give).
name: bad-fixture
description: Fixture GPU for the bad-profile corpus
sm:
  count: {value: 132, source: "fixture"}
  boost_clock_mhz: {value: 1980, source: "fixture"}
  base_clock_mhz: {value: 1590, source: "fixture"}
  smem_per_sm_bytes: {value: 233472, source: "fixture"}
  smem_per_cta_max_bytes: {value: 232448, source: "fixture"}
  smem_reserved_per_cta_bytes: {value: 1024, source: "fixture"}
  registers_per_sm: {value: 65536, source: "fixture"}
  max_registers_per_thread: {value: 255, source: "fixture"}
  max_threads_per_sm: {value: 2048, source: "fixture"}
  max_ctas_per_sm: {value: 32, source: "fixture"}
  smem_bandwidth_bytes_per_clk: {value: 128, source: "fixture"}
  l2_to_sm_bytes_per_clk: {value: 124, source: "fixture"}
  smem_latency_cycles: {value: 30, source: "fixture"}
  setmaxnreg_min_registers: {value: 24, source: "fixture"}
  setmaxnreg_max_registers: {value: 256, source: "fixture"}
  setmaxnreg_step_registers: {value: 8, source: "fixture"}
  setmaxnreg_cycles: {value: 60, source: "fixture"}
compute:
  tensor_fp16_tflops: {value: 989.4, source: "fixture"}
  tensor_bf16_tflops: {value: 989.4, source: "fixture"}
  tensor_tf32_tflops: {value: 494.7, source: "fixture"}
  tensor_fp8_tflops: {value: 1978.9, source: "fixture"}
  fp32_tflops: {value: 66.9, source: "fixture"}
  sfu_ops_per_clk_per_sm: {value: 16, source: "fixture"}
  mma_sync_flops_per_clk_per_sm: {value: 2719, source: "fixture"}
  int32_ops_per_clk_per_sm: {value: 64, source: "fixture"}
  fp32_latency_cycles: {value: 4, source: "fixture"}
  wgmma_latency_cycles: {value: 91.5, source: "fixture"}
l2:
  size_bytes: {value: 52428800, source: "fixture"}
  line_bytes: {value: 128, source: "fixture"}
  sector_bytes: {value: 32, source: "fixture"}
  bandwidth_gbps: {value: 7600, source: "fixture"}
  hit_latency_cycles: {value: 290, source: "fixture"}
  partitions: {value: 2, source: "fixture"}
  max_dirty_fraction: {value: 0.47, source: "fixture"}
hbm:
  capacity_bytes: {value: 85899345920, source: "fixture"}
  bandwidth_gbps: {value: 3352, source: "fixture"}
  achievable_fraction: {value: 0.9, source: "fixture"}
  latency_ns: {value: 214.6, source: "fixture"}
launch:
  kernel_overhead_us: {value: 4.45, source: "fixture"}
'''

def sub(old, new, text=BASE):
    assert text.count(old) == 1, old
    return text.replace(old, new)

cases = []  # (file stem, text, expected message with @L[...]@ line placeholders)
def add(name, text, expected):
    cases.append((name, text, expected))

t = sub('  sector_bytes: {value: 32', '  sector_byte: {value: 32')
add('unknown_key_typo', t, "unknown_key_typo.yaml:@L[sector_byte]@: unknown key 'l2.sector_byte' (did you mean 'sector_bytes'?)")
t = sub('  bandwidth_gbps: {value: 3352, source: "fixture"}\n', '')
add('missing_key', t, "missing_key.yaml: missing required key 'hbm.bandwidth_gbps'")
t = sub('count: {value: 132,', 'count: {value: many,')
add('wrong_type_string', t, "wrong_type_string.yaml:@L[count]@: 'sm.count.value' must be an integer, got 'many'")
t = sub('registers_per_sm: {value: 65536,', 'registers_per_sm: {value: "65536",')
add('wrong_type_quoted_number', t, "wrong_type_quoted_number.yaml:@L[  registers_per_sm]@: 'sm.registers_per_sm.value' must be an integer, got the string \"65536\"")
t = sub('max_ctas_per_sm: {value: 32,', 'max_ctas_per_sm: {value: 32.5,')
add('non_integer', t, "non_integer.yaml:@L[max_ctas_per_sm]@: 'sm.max_ctas_per_sm.value' must be an integer, got '32.5'")
t = sub('bandwidth_gbps: {value: 3352,', 'bandwidth_gbps: {value: 0,')
add('zero_value', t, "zero_value.yaml:@L[bandwidth_gbps: {value: 0]@: hbm.bandwidth_gbps = 0 must be > 0")
t = sub('size_bytes: {value: 52428800,', 'size_bytes: {value: -52428800,')
add('negative_value', t, "negative_value.yaml:@L[size_bytes]@: l2.size_bytes = -52428800 must be > 0")
t = sub('size_bytes: {value: 52428800,', 'size_bytes: {value: 52428900,')
add('line_not_dividing_size', t, "line_not_dividing_size.yaml:@L[line_bytes]@: l2.line_bytes = 128 does not divide l2.size_bytes = 52428900")
t = sub('sector_bytes: {value: 32,', 'sector_bytes: {value: 48,')
add('sector_not_dividing_line', t, "sector_not_dividing_line.yaml:@L[sector_bytes]@: l2.sector_bytes = 48 does not divide l2.line_bytes = 128")
t = sub('smem_per_cta_max_bytes: {value: 232448,', 'smem_per_cta_max_bytes: {value: 300000,')
add('cta_smem_above_sm', t, "cta_smem_above_sm.yaml:@L[smem_per_cta_max_bytes]@: sm.smem_per_cta_max_bytes = 300000 exceeds sm.smem_per_sm_bytes = 233472")
t = sub('smem_per_cta_max_bytes: {value: 232448,', 'smem_per_cta_max_bytes: {value: 233472,')
add('cta_smem_plus_reserved_above_sm', t, "cta_smem_plus_reserved_above_sm.yaml:@L[smem_reserved_per_cta_bytes]@: sm.smem_per_cta_max_bytes + sm.smem_reserved_per_cta_bytes = 233472 + 1024 = 234496 exceeds sm.smem_per_sm_bytes = 233472")
t = sub('fp32_tflops: {value: 66.9, source: "fixture"}', 'fp32_tflops: {value: 66.9, source: ""}')
add('empty_source', t, "empty_source.yaml:@L[fp32_tflops]@: 'compute.fp32_tflops.source' must be a non-empty string naming where the number comes from, got an empty string")
t = sub('  latency_ns: {value: 214.6, source: "fixture"}', '  latency_ns: {value: 214.6, source: "fixture"')
add('yaml_syntax_error', t, "yaml_syntax_error.yaml:@L[launch:]@:1: YAML syntax error: end of map flow not found")
add('empty_file', '', "empty_file.yaml: the profile is empty; expected a map with keys name, description, sm, compute, l2, hbm, launch")
add('comment_only', '# nothing but a comment\n', "comment_only.yaml: the profile is empty")
t = sub('base_clock_mhz: {value: 1590,', 'base_clock_mhz: {value: 2100,')
add('base_above_boost', t, "base_above_boost.yaml:@L[base_clock_mhz]@: sm.base_clock_mhz = 2100 exceeds sm.boost_clock_mhz = 1980")
t = sub('achievable_fraction: {value: 0.9,', 'achievable_fraction: {value: 1.2,')
add('fraction_above_one', t, "fraction_above_one.yaml:@L[achievable_fraction]@: hbm.achievable_fraction = 1.2 is not in (0, 1]")
t = sub('  count: {value: 132, source: "fixture"}', '  count: 132')
add('plain_number', t, "plain_number.yaml:@L[count]@: 'sm.count' must be a map {value: <number>, source: \"<where the number comes from>\"}, got '132'")
t = BASE + 'l3:\n  size_bytes: {value: 1, source: "fixture"}\n'
add('unknown_section', t, "unknown_section.yaml:@L[l3:]@: unknown key 'l3' (did you mean 'l2'?)")
t = sub('max_registers_per_thread: {value: 255,', 'max_registers_per_thread: {value: 70000,')
add('registers_above_sm', t, "registers_above_sm.yaml:@L[max_registers_per_thread]@: sm.max_registers_per_thread = 70000 exceeds sm.registers_per_sm = 65536")
t = sub('kernel_overhead_us: {value: 4.45, source: "fixture"}', 'kernel_overhead_us: {value: 4.45}')
add('missing_source', t, "missing_source.yaml: missing required key 'launch.kernel_overhead_us.source'")
t = sub('kernel_overhead_us: {value: 4.45, source: "fixture"}', 'kernel_overhead_us: {value: 4.45, source: "fixture", unit: "us"}')
add('unknown_leaf_key', t, "unknown_leaf_key.yaml:@L[kernel_overhead_us]@: unknown key 'launch.kernel_overhead_us.unit'")
t = sub('  boost_clock_mhz: {value: 1980, source: "fixture"}\n', '  boost_clock_mhz: {value: 1980, source: "fixture"}\n  count: {value: 132, source: "fixture"}\n')
add('duplicate_key', t, "duplicate_key.yaml:@L2[  count: {value: 132]@: duplicate key 'sm.count' (first at line @L[count]@)")
add('top_level_list', '- name: bad-fixture\n- description: a list, not a map\n', "top_level_list.yaml: the top level must be a map with keys name, description, sm, compute, l2, hbm, launch, got a list")
add('two_documents', BASE + '---\n' + BASE, "two_documents.yaml: holds 2 YAML documents; a profile is exactly one")
# yaml-cpp's LoadAll never returned on these (a ',' at a document's top level; fuzz_profile).
add('top_level_comma', ', source: "fixture"}\n' + BASE, "top_level_comma.yaml:1:1: YAML syntax error: ',' cannot stand at the top level of a document")
add('two_flow_maps', '{name: a, description: b}, {name: c}\n', "two_flow_maps.yaml:1:26: YAML syntax error: ',' cannot stand at the top level of a document")
t = sub('launch:\n  kernel_overhead_us: {value: 4.45, source: "fixture"}\n', '')
add('missing_section', t, "missing_section.yaml: missing required key 'launch'")
t = re.sub(r'compute:\n(  .*\n)+?l2:', 'compute: 5\nl2:', BASE)
add('section_not_map', t, "section_not_map.yaml:@L[compute]@: 'compute' must be a map of compute fields, got '5'")
t = sub('bandwidth_gbps: {value: 7600,', 'bandwidth_gbps: {value: .inf,')
add('non_finite', t, "non_finite.yaml:@L[bandwidth_gbps: {value: .inf]@: 'l2.bandwidth_gbps.value' must be a finite number, got '.inf'")
t = sub('name: bad-fixture', 'name: ""')
add('empty_name', t, "empty_name.yaml:@L[name:]@: 'name' must be a non-empty string, got an empty string")
t = sub('count: {value: 132,', 'count: {value: 99999999999,')
add('int_out_of_range', t, "int_out_of_range.yaml:@L[count]@: 'sm.count.value' = 99999999999 is out of range")
t = sub('latency_ns: {value: 214.6,', 'latency_ns: {value: ,')
add('null_value', t, "null_value.yaml:@L[latency_ns]@: 'hbm.latency_ns.value' must be a number, got nothing")
t = sub('description: Fixture GPU for the bad-profile corpus\n', 'description: Fixture GPU for the bad-profile corpus\ndescripton: typo of a top-level key\n')
add('unknown_top_level_typo', t, "unknown_top_level_typo.yaml:@L[descripton]@: unknown key 'descripton' (did you mean 'description'?)")
# Sizes no GPU has: they once ended in std::bad_alloc or an L2 error naming no file or key.
t = sub('count: {value: 132,', 'count: {value: 2000000000,')
add('sm_count_huge', t, "sm_count_huge.yaml:@L[count]@: sm.count = 2000000000 exceeds 4096")
t = sub('size_bytes: {value: 52428800,', 'size_bytes: {value: 128,')
add('l2_tiny', t, "l2_tiny.yaml:@L[size_bytes]@: l2.size_bytes = 128 over l2.partitions = 2 leaves less than one region")
t = sub('boost_clock_mhz: {value: 1980,', 'boost_clock_mhz: {value: 1e-300,')
add('clock_tiny', t, "clock_tiny.yaml:@L[boost_clock_mhz]@: sm.boost_clock_mhz = 1e-300 is below 1 MHz")
t = sub('size_bytes: {value: 52428800,', 'size_bytes: {value: 1099511627776,')
add('l2_huge', t, "l2_huge.yaml:@L[size_bytes]@: l2.size_bytes = 1099511627776 exceeds 4294967296")
# A "billion laughs" alias bomb: yaml-cpp shares aliased nodes, the reader stops at the first key.
bomb = 'a: &a ["x","x","x","x","x","x","x","x","x"]\n'
for i, c in enumerate('bcdefghi'):
    prev = 'abcdefghi'[i]
    bomb += c + ': &' + c + ' [' + ','.join(['*' + prev] * 9) + ']\n'
add('alias_bomb', bomb, "alias_bomb.yaml:1: YAML anchors and aliases ('&') are not allowed in a profile")

os.makedirs(OUT, exist_ok=True)
for f in os.listdir(OUT):
    if f.endswith('.yaml'):
        os.remove(os.path.join(OUT, f))
rows = []
for name, text, expected in cases:
    path = os.path.join(OUT, name + '.yaml')
    open(path, 'w').write(text)
    def fill(m):
        nth = 2 if m.group(1) == '2' else 1
        lines = [i + 1 for i, l in enumerate(text.split('\n')) if m.group(2) in l]
        return str(lines[nth - 1])
    out = re.sub(r'@L(2?)\[(.*?)\]@', fill, expected)
    rows.append((name + '.yaml', out))
with open(os.path.join(OUT, 'EXPECTED.tsv'), 'w') as f:
    f.write('# file<TAB>substring the ConfigError message must contain (file name, line, key path, numbers)\n')
    for r in rows:
        assert '\t' not in r[1] and '\n' not in r[1], r
        f.write(r[0] + '\t' + r[1] + '\n')
print(len(rows), 'cases')
