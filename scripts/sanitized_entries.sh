# Sourced by scripts/sanitize.sh and scripts/test.sh: which ctest entries run under the sanitizers.
# The unit suites (unit_long with a tenth of its shapes: test::cases) but the whole measured sets
# and the alike-heads property (scripts/sanitize.sh and CMakeLists.txt say why), the CLI tests,
# sweep_cli, bad_inputs, sweep_resume and determinism:
SANITIZED_ENTRIES='^(unit_.*|cli_.*|sweep_cli|bad_inputs|sweep_resume|determinism)$'
SANITIZED_EXCEPT='^unit_(measured_sets|alike_heads)$'
# Of those, the entries whose sanitized run checks everything their Release run does. .ci/run runs
# them once, sanitized (scripts/test.sh with IOSIM_CI_SANITIZED_ONCE=1). Not bad_inputs (its
# memory limit, ulimit -v, is off under ASan: that run's Release pass keeps the inputs that ask
# for memory, IOSIM_BAD_INPUTS_MEMORY_ONLY), sweep_resume (a shorter sweep there) nor unit_long
# (a tenth of its shapes there).
SANITIZED_ONCE='^(unit_(validation|numerics|decode|rest)|cli_.*|sweep_cli|determinism)$'
