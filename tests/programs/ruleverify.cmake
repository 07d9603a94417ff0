# ruleverify as CI gate: the corpus must verify (exit 0); a wrong rule gives exit 1 with a counterexample;
# unreadable input gives exit 2 with a clear message.
if(TARGET ruleverify)
  set(_rv_data ${TEQ_SOURCE_DIR}/tests/verify/data)
  # The hand-written seed (a test fixture: eqsat-run's default was this corpus before rulegen's), with the axiom proofs too.
  add_test(NAME ruleverify.seed_corpus
           COMMAND ruleverify ${TEQ_SOURCE_DIR}/tests/data/seed.json --jobs 2)
  set_tests_properties(ruleverify.seed_corpus PROPERTIES TIMEOUT 300)
  # The CI gate is ruleverify's default command, exactly as README documents it: rulegen's 697 rules (20 with shape conditions) (with the wide, neighbour and set-C checks and the generalization step), each
  # proved for all shapes from axioms where it can be and element-wise otherwise, 0 unknown. Budgets are Z3
  # resource limits, so a busy CI machine gets the same verdicts, only later: the counts by method are part of
  # what must match, and ctest runs this test beside the others, so it is a run under load.
  add_test(NAME ruleverify.corpus COMMAND ruleverify corpus/rules.json WORKING_DIRECTORY ${TEQ_SOURCE_DIR})
  set_tests_properties(ruleverify.corpus PROPERTIES TIMEOUT 600
                       PASS_REGULAR_EXPRESSION "697 rules: 697 verified \\(509 for all shapes by axioms, 188 element-wise on concrete shapes\\), 0 wrong, 0 unknown")
  # The same verdicts alone on one thread and on two threads beside another CPU-bound ruleverify. The
  # budgets are tight on purpose: two maxpool rules exhaust their rlimit (unknown), and rg-0147-concat-ewadd's
  # method sits on the axiom budget (proved from axioms at 27500, element-wise only at 25000): outcomes a
  # wall-clock budget would flip under load.
  set(_rv_border --rule rg-0001-ewadd-ewadd --rule rg-0132-maxpool-maxpool --rule rg-0147-concat-ewadd
                 --rule rg-0078-conv2d-relu --rule rg-0594-split-split-multi --rule rg-0595-split-split-multi
                 --rule rg-0561-maxpool-ewmul --rule rg-0564-maxpool-ewmul --rlimit 1000000 --axiom-rlimit 27500)
  add_test(NAME ruleverify.same_verdicts_under_load
           COMMAND ${CMAKE_COMMAND} -DPROGRAM=$<TARGET_FILE:ruleverify> -DINPUT=${TEQ_SOURCE_DIR}/corpus/rules.json
                   "-DARGS=${_rv_border}"
                   "-DLOAD=$<TARGET_FILE:ruleverify> ${TEQ_SOURCE_DIR}/tests/data/seed.json --no-axioms --jobs 2"
                   "-DEXPECT_STDOUT=rg-0561-maxpool-ewmul +unknown.*rlimit 1000000 per query.*8 rules: 6 verified .*2 unknown"
                   -P ${TEQ_SOURCE_DIR}/tests/verify/same_verdicts.cmake)
  set_tests_properties(ruleverify.same_verdicts_under_load PROPERTIES TIMEOUT 300)
  # The wall-clock budgets are gone (they made verdicts depend on the load): refused with their replacement.
  foreach(case "timeout-ms;--rlimit" "axiom-timeout-ms;--axiom-rlimit")
    list(GET case 0 _flag)
    list(GET case 1 _new)
    add_test(NAME ruleverify.removed_flag_${_flag}
             COMMAND ${CMAKE_COMMAND} -DPROGRAM=$<TARGET_FILE:ruleverify> -DINPUT=${TEQ_SOURCE_DIR}/tests/data/seed.json
                     -DEXPECT_CODE=2 "-DEXPECT_TEXT=--${_flag} was removed: .* use ${_new}" "-DEXTRA_ARGS=--${_flag};60000"
                     -P ${TEQ_SOURCE_DIR}/tests/verify/expect_exit.cmake)
  endforeach()
  # A rule stopped by the wall-clock guard is unknown and says so (exit 1); 1 ms stops the slowest maxpool rule.
  add_test(NAME ruleverify.guard_is_reported
           COMMAND ${CMAKE_COMMAND} -DPROGRAM=$<TARGET_FILE:ruleverify> -DINPUT=${TEQ_SOURCE_DIR}/corpus/rules.json
                   -DEXPECT_CODE=1 "-DEXPECT_STDOUT=rg-0561-maxpool-ewmul +unknown.*wall-clock guard of 1 ms"
                   "-DEXTRA_ARGS=--rule;rg-0561-maxpool-ewmul;--guard-ms;1"
                   -P ${TEQ_SOURCE_DIR}/tests/verify/expect_exit.cmake)

  # A rule that holds only where unrelated extents agree verifies by default (the optimizer applies it only
  # there) and is wrong under --strict-shapes, with the shapes that tell it apart; a general rule stays verified.
  add_test(NAME ruleverify.coincidence_verifies_by_default COMMAND ruleverify ${_rv_data}/coincidence_rules.json --jobs 2)
  add_test(NAME ruleverify.strict_shapes
           COMMAND ${CMAKE_COMMAND} -DPROGRAM=$<TARGET_FILE:ruleverify> -DINPUT=${_rv_data}/coincidence_rules.json
                   -DEXPECT_CODE=1
                   "-DEXPECT_STDOUT=cut-at-unrelated-channels +wrong.*holds only where unrelated extents agree.*transpose-twice +verified.*1 verified.*1 wrong"
                   "-DEXTRA_ARGS=--strict-shapes" -P ${TEQ_SOURCE_DIR}/tests/verify/expect_exit.cmake)

  add_test(NAME ruleverify.wrong_rule_exit_1 COMMAND ruleverify ${_rv_data}/wrong_rules.json --jobs 2)
  set_tests_properties(ruleverify.wrong_rule_exit_1 PROPERTIES WILL_FAIL TRUE)
  # The same run must name the wrong rule and print a counterexample (WILL_FAIL cannot check output).
  add_test(NAME ruleverify.wrong_rule_counterexample COMMAND ruleverify ${_rv_data}/wrong_rules.json --jobs 2)
  set_tests_properties(ruleverify.wrong_rule_counterexample PROPERTIES
    PASS_REGULAR_EXPRESSION "relu-ewadd-wrong +wrong.*counterexample.*output 0 at \\[.*matmul-shape-wrong +wrong.*lhs has shape")

  # The operators of real PyTorch exports (sqrt, erf, clip, reduce_mean, pad) and the importer's folds of a
  # zero Pad into avgpool/conv2d padding: one true rule each verifies; wrong ones come out wrong with a
  # counterexample.
  add_test(NAME ruleverify.vocab_rules COMMAND ruleverify ${_rv_data}/vocab_rules.json --no-axioms --jobs 2)
  set_tests_properties(ruleverify.vocab_rules PROPERTIES TIMEOUT 300 PASS_REGULAR_EXPRESSION "11 rules: 11 verified")
  add_test(NAME ruleverify.vocab_wrong_rules
           COMMAND ${CMAKE_COMMAND} -DPROGRAM=$<TARGET_FILE:ruleverify> -DINPUT=${_rv_data}/vocab_wrong_rules.json
                   -DEXPECT_CODE=1 "-DEXPECT_STDOUT=sqrt-square-wrong +wrong.*counterexample.*relu6-is-relu-wrong +wrong.*counterexample.*reduce-mean-of-concat-wrong +wrong.*counterexample.*pad-into-avgpool-excluding-pad-wrong +wrong.*counterexample.*4 rules: 0 verified"
                   -P ${TEQ_SOURCE_DIR}/tests/verify/expect_exit.cmake)
  set_tests_properties(ruleverify.vocab_wrong_rules PROPERTIES TIMEOUT 300)

  # Exit status exactly 1 / 2: run through cmake -P so the code itself is compared.
  foreach(case "wrong_rules.json;1;"
               "no_such_file.json;2;cannot open"
               "malformed.json;2;not valid JSON"
               "bad_pattern.json;2;bad-pattern")
    list(GET case 0 _file)
    list(GET case 1 _code)
    list(GET case 2 _text)
    add_test(NAME ruleverify.exit_${_code}_${_file}
             COMMAND ${CMAKE_COMMAND} -DPROGRAM=$<TARGET_FILE:ruleverify> -DINPUT=${_rv_data}/${_file}
                     -DEXPECT_CODE=${_code} "-DEXPECT_TEXT=${_text}"
                     -P ${TEQ_SOURCE_DIR}/tests/verify/expect_exit.cmake)
  endforeach()

  # Tensat's whole operator language (docs/importers.md): one rule per operator imports and verifies
  # (exit 0 needs every rule imported and verified); deliberately wrong rules about activation and pad
  # codes, average-pool padding and enlarge at stride 2 come out wrong, so the mapping is not vacuous;
  # what has no counterpart is refused with its name and line.
  set(_anch ${TEQ_SOURCE_DIR}/corpus/anchors/tensat)
  foreach(case "every_operator;${_rv_data}/tensat_every_operator.txt;0;;;"
               "wrong_mappings;${_rv_data}/tensat_wrong_mappings.txt;1;;5 rules: 0 verified.* 5 wrong;"
               "refused_operators;${_rv_data}/tensat_refused_operators.txt;1;tensat-1: Tensat operator 'input' \\(line 1\\).*tensat-2: Tensat operator 'weight' \\(line 2\\);;"
               # Tensat's pre-defined rules (src/rewrites.rs): the enlarge multi rules hold for ungrouped
               # convolutions and are wrong for grouped ones. The merge rules (upstream TASO's merge_gconv)
               # are well-shaped only for grouped convs whose group count the count divides; they hold for
               # 2 groups and are wrong for 4, each with a counterexample.
               "predefined_multi;${_anch}/predefined_multi.txt;0;;2 rules: 2 verified;"
               "predefined_multi_grouped;${_anch}/predefined_multi.txt;1;;tensat-multi-1 +wrong.*tensat-multi-2 +wrong;--grouped-conv"
               "predefined_merge;${_anch}/predefined_rules.txt;1;;tensat-1 +wrong.*counterexample.*tensat-2 +wrong.*counterexample.*tensat-3 +wrong.*counterexample.*tensat-4 +wrong.*counterexample.*4 rules: 0 verified.* 4 wrong, 0 unknown;")
    list(GET case 0 _name)
    list(GET case 1 _file)
    list(GET case 2 _code)
    list(GET case 3 _err)
    list(GET case 4 _out)
    list(GET case 5 _extra)
    add_test(NAME ruleverify.tensat_${_name}
             COMMAND ${CMAKE_COMMAND} -DPROGRAM=$<TARGET_FILE:ruleverify> -DINPUT=${_file} -DEXPECT_CODE=${_code}
                     "-DEXPECT_TEXT=${_err}" "-DEXPECT_STDOUT=${_out}" "-DEXTRA_ARGS=${_extra}"
                     -P ${TEQ_SOURCE_DIR}/tests/verify/expect_exit.cmake)
  endforeach()
endif()
