# rulegen's command line: a small run, a shard pair merged, coverage, and errors (exit 2).
if(TARGET rulegen)
  set(_rg $<TARGET_FILE:rulegen>)
  set(_out ${CMAKE_CURRENT_BINARY_DIR}/rulegen_test)
  add_test(NAME rulegen.small_run
           COMMAND ${CMAKE_COMMAND} -E env ${_rg} --ops matmul,ewadd --max-ops 2 --threads 2 --out ${_out}_small.json)
  set_tests_properties(rulegen.small_run PROPERTIES PASS_REGULAR_EXPRESSION "summary: .* kept")
  if(TARGET ruleverify)
    # Every rule rulegen emits passes ruleverify (its default checks, axioms included): exit status 0.
    add_test(NAME rulegen.small_run_passes_ruleverify COMMAND $<TARGET_FILE:ruleverify> ${_out}_small.json)
    set_tests_properties(rulegen.small_run_passes_ruleverify PROPERTIES DEPENDS rulegen.small_run)
  endif()
  add_test(NAME rulegen.unknown_operator COMMAND ${_rg} --ops matmul,frobnicate --out ${_out}_bad.json)
  set_tests_properties(rulegen.unknown_operator PROPERTIES WILL_FAIL TRUE)
  add_test(NAME rulegen.unknown_operator_message COMMAND ${_rg} --ops matmul,frobnicate --out ${_out}_bad.json)
  set_tests_properties(rulegen.unknown_operator_message PROPERTIES PASS_REGULAR_EXPRESSION "unknown operator 'frobnicate'")
  add_test(NAME rulegen.bad_shard COMMAND ${_rg} --shard 3/2 --out ${_out}_bad.json)
  set_tests_properties(rulegen.bad_shard PROPERTIES PASS_REGULAR_EXPRESSION "--shard must be i/n")
  add_test(NAME rulegen.derive_tensat
           COMMAND ${_rg} derive --using ${_out}_small.json --target ${TEQ_ANCHORS_DIR}/tensat/converted.txt --threads 2)
  set_tests_properties(rulegen.derive_tensat PROPERTIES DEPENDS rulegen.small_run
                       PASS_REGULAR_EXPRESSION "derived [0-9]+/120")
  # derive reads targets in Tensat's syntax that use pooling and enlarge; with rulegen's corpus the max
  # pool, fused-activation and enlarge rules derive (small limits: under a second). The average-pool rule
  # (Tensat's excludes padding, rulegen's vocabulary has only include_pad 1) need not.
  add_test(NAME rulegen.derive_tensat_pooling_enlarge
           COMMAND ${_rg} derive --using ${TEQ_SOURCE_DIR}/corpus/rules.json
                   --target ${TEQ_SOURCE_DIR}/tests/verify/data/tensat_pool_enlarge_targets.txt
                   --node-limit 3000 --iter-limit 4 --threads 2)
  set_tests_properties(rulegen.derive_tensat_pooling_enlarge PROPERTIES
                       PASS_REGULAR_EXPRESSION "derived [0-9]+/4 "
                       FAIL_REGULAR_EXPRESSION "not imported|not derived: tensat-[134]:")
  # Laws over four tensors of one type (the seed's concat-ewadd-channels and ewadd-batch) are found only
  # through rulegen's generalization step (docs/rulegen.md step 8): the committed corpus derives both.
  add_test(NAME rulegen.derive_four_variable_laws
           COMMAND ${_rg} derive --using ${TEQ_SOURCE_DIR}/corpus/rules.json
                   --target ${TEQ_SOURCE_DIR}/tests/synth/four_variable_seed_rules.json --threads 2)
  set_tests_properties(rulegen.derive_four_variable_laws PROPERTIES PASS_REGULAR_EXPRESSION "derived 2/2 ")
  # --generic-shapes types the target as minimization does: a derivation through a 3x3 kernel's coincidence
  # (one-pixel padding is SAME padding) holds at the leaf type k, not at the distinct extents of the shape search.
  foreach(case "leaf_types;;derived 1/1 " "generic_shapes;--generic-shapes;derived 0/1 .*not derived: pad1-linear")
    list(GET case 0 _name)
    list(GET case 1 _flag)
    list(GET case 2 _expect)
    add_test(NAME rulegen.derive_pad1_linear_${_name}
             COMMAND ${_rg} derive --using ${TEQ_SOURCE_DIR}/tests/synth/square_kernel_rules.json
                     --target ${TEQ_SOURCE_DIR}/tests/synth/pad1_linear_target.json --threads 1 ${_flag})
    set_tests_properties(rulegen.derive_pad1_linear_${_name} PROPERTIES PASS_REGULAR_EXPRESSION "${_expect}")
  endforeach()
endif()
