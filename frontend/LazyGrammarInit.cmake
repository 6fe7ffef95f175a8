# Run after ANTLR generates the grammar's C++ (cmake -DFILE=... -DCLASS=... -P this file): the
# generated class sets up its ATN in a static initializer, which every program linking the
# frontend paid at start-up (a fifth of the instructions of `brevisc --version`) although the
# parser is only asked for a diagnostic. The set-up moves into the class's constructor, run once,
# thread-safely, on the first construction. Where the generated code does not have the expected
# shape (another ANTLR version), the file is left as it is.
file(READ "${FILE}" text)
set(definition "${CLASS}::Initializer ${CLASS}::_init;")
string(REGEX MATCH "${CLASS}::${CLASS}\\(CharStream \\*input\\) : Lexer\\(input\\) {\n|${CLASS}::${CLASS}\\(TokenStream \\*input\\) : Parser\\(input\\) {\n" constructor "${text}")
string(FIND "${text}" "${definition}" at)
if(constructor STREQUAL "" OR at EQUAL -1)
  message(STATUS "${FILE}: not the expected generated code; its static initializer stays")
  return()
endif()
string(REPLACE "${definition}" "// ${CLASS}::_init: set up by the first constructor instead (LazyGrammarInit.cmake)." text "${text}")
string(REPLACE "${constructor}" "${constructor}  static Initializer once; // LazyGrammarInit.cmake\n" text "${text}")
file(WRITE "${FILE}" "${text}")
