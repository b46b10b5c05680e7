# The attnc command links every stage.
add_executable(attnc attnc.c ptxas.c)
target_compile_options(attnc PRIVATE ${ATTN_WARNINGS})
target_compile_definitions(attnc PRIVATE ATTNC_VERSION="${PROJECT_VERSION}")
target_link_libraries(attnc PRIVATE attn_front attn_plan attn_cemit attn_ptx attn_host attn_mlir)
set_target_properties(attnc PROPERTIES LINKER_LANGUAGE CXX)
install(TARGETS attnc RUNTIME DESTINATION bin)
