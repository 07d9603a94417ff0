# What `cmake --install` writes (docs/install.md), in two components:
#   runtime      the programs (bin/) and the corpus: rules, device profiles, bundled models, anchors
#                (share/tensor_eqsat/corpus, where an installed eqsat-run finds it: find_corpus_dir)
#   development  the static libraries, their headers (include/tensor_eqsat) and the package config, so that
#                find_package(tensor_eqsat) + target_link_libraries(app tensor_eqsat::optimizer) work
# The Python package (pip install ., python/) installs the runtime component inside its own folder, with the
# same layout: tensor_eqsat/bin, tensor_eqsat/share/tensor_eqsat/corpus.
include(CMakePackageConfigHelpers)

if(SKBUILD)
  set(TEQ_INSTALL_ROOT "tensor_eqsat/")
else()
  set(TEQ_INSTALL_ROOT "")
endif()
set(TEQ_CORPUS_INSTALL_DIR "${TEQ_INSTALL_ROOT}${CMAKE_INSTALL_DATADIR}/tensor_eqsat/corpus")
set(TEQ_CMAKE_INSTALL_DIR "${CMAKE_INSTALL_LIBDIR}/cmake/tensor_eqsat")

# Libraries under the names consumers use: tensor_eqsat::rules, ::verify, ::engine, ... ::optimizer.
set(TEQ_EXPORTED_LIBRARIES teq_rules teq_verify teq_engine teq_models teq_ilp teq_cost teq_onnx teq_optimizer
    teq_synth)
if(TARGET teq_cuda)
  list(APPEND TEQ_EXPORTED_LIBRARIES teq_cuda)
  set(TEQ_INSTALLED_CUDA ON)
else()
  set(TEQ_INSTALLED_CUDA OFF)
endif()
foreach(library IN LISTS TEQ_EXPORTED_LIBRARIES)
  string(REGEX REPLACE "^teq_" "" short_name ${library})
  set_target_properties(${library} PROPERTIES EXPORT_NAME ${short_name})
  add_library(tensor_eqsat::${short_name} ALIAS ${library})
endforeach()

install(TARGETS eqsat-run ruleverify rulegen EXPORT tensor_eqsatTargets
        RUNTIME DESTINATION ${TEQ_INSTALL_ROOT}${CMAKE_INSTALL_BINDIR} COMPONENT runtime)
install(DIRECTORY ${PROJECT_SOURCE_DIR}/corpus/ DESTINATION ${TEQ_CORPUS_INSTALL_DIR} COMPONENT runtime)

install(TARGETS ${TEQ_EXPORTED_LIBRARIES} EXPORT tensor_eqsatTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT development)
foreach(folder IN ITEMS rules verify synth optimizer)
  install(DIRECTORY ${PROJECT_SOURCE_DIR}/${folder} DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/tensor_eqsat
          COMPONENT development FILES_MATCHING PATTERN "*.h" PATTERN "*.inc")
endforeach()
install(EXPORT tensor_eqsatTargets NAMESPACE tensor_eqsat:: DESTINATION ${TEQ_CMAKE_INSTALL_DIR}
        COMPONENT development)
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/tensor_eqsatConfig.cmake.in
  ${PROJECT_BINARY_DIR}/tensor_eqsatConfig.cmake INSTALL_DESTINATION ${TEQ_CMAKE_INSTALL_DIR}
  PATH_VARS TEQ_CORPUS_INSTALL_DIR)
write_basic_package_version_file(${PROJECT_BINARY_DIR}/tensor_eqsatConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/tensor_eqsatConfig.cmake ${PROJECT_BINARY_DIR}/tensor_eqsatConfigVersion.cmake
        DESTINATION ${TEQ_CMAKE_INSTALL_DIR} COMPONENT development)
