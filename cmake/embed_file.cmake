# cmake -DINPUT=file -DOUTPUT=out.c -DSYMBOL=name -P embed_file.cmake
# Writes a C file defining `const unsigned char SYMBOL[]` and `const size_t SYMBOL_len`.
file(READ "${INPUT}" hex HEX)
string(LENGTH "${hex}" hexlen)
math(EXPR len "${hexlen} / 2")
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," bytes "${hex}")
string(REGEX REPLACE "((0x..,){32})" "\\1\n" bytes "${bytes}")
file(WRITE "${OUTPUT}.tmp" "#include <stddef.h>\nconst unsigned char ${SYMBOL}[] = {\n${bytes}0x00};\nconst size_t ${SYMBOL}_len = ${len};\n")
file(RENAME "${OUTPUT}.tmp" "${OUTPUT}")
