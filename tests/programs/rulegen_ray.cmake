# The distributed rulegen (tools/rulegen_ray.py, docs/rulegen.md "Distributed"): a local Ray cluster of two
# worker nodes gives one process's corpus, also when a worker node is killed mid-run (label `ray`:
# ctest -L ray). Needs the .venv of tools/setup-python.sh with its pinned ray; skipped (77) with the reason
# when ray could not be installed there, never passed without running.
if(TARGET rulegen)
  set(TEQ_RAY_VENV ${PROJECT_SOURCE_DIR}/.venv/bin/python)
  add_test(NAME rulegen_ray.two_workers
           COMMAND sh -c "if [ -x '${TEQ_RAY_VENV}' ]; then exec '${TEQ_RAY_VENV}' \"$@\"; else echo 'skipped: no .venv (run tools/setup-python.sh, which installs ray)'; exit 77; fi"
                   sh ${PROJECT_SOURCE_DIR}/tests/python/rulegen_ray_cluster.py $<TARGET_FILE:rulegen>)
  set_tests_properties(rulegen_ray.two_workers PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 300 LABELS ray)
endif()
