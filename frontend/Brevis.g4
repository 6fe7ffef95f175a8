// Brevis program text (.bdsl): a checkpoint program, or one bare expression for experiments.
// lang/Printer.cpp defines the canonical form; this grammar accepts everything it prints.
//
// Names that come from a closed list in lang/ (encodings, map functions, scan ops, dtypes,
// stream types like u8) are plain IDENTs here and are validated by the AST builder
// (frontend/Parser.cpp), so an unknown name gets a specific error instead of
// "mismatched input". Numbers are validated there too (hex/decimal, 64-bit range).
grammar Brevis;

program : (checkpoint | expr) EOF ;

// --- checkpoint programs ------------------------------------------------------------------

checkpoint : BREVIS version=NUMBER sourceDecl payloadDecl region* ;

// Not part of the language: the parser reads a checkpoint piece by piece (the program up to
// its first region with `program`, then each region with `regions`), so that tokens and trees
// are freed as it goes. The loop ends a rule, as in `checkpoint`, and EOF is matched by the
// caller, as in `program`: error messages are the same as for the whole text.
regions : regionList EOF ;

regionList : region* ;

sourceDecl : SOURCE fileName=STRING SIZE size=NUMBER XXH64 hash=NUMBER ;

payloadDecl : PAYLOAD fileName=STRING SIZE size=NUMBER ;

// A range may leave its offset out (`@+SIZE`): it starts where the region before it ends. A
// tensor region, and a header written as `safetensors(…)`, may leave the whole range out. (The
// builder reports a header or bytes region written as an expression without a range.)
region
  : HEADER byteRange? regionDigest? '=' SAFETENSORS '(' indexPart (',' indexPart)* ')' # indexHeaderRegion
  | HEADER byteRange? regionDigest? '=' expr                       # headerRegion
  | BYTES byteRange? regionDigest? '=' expr                        # bytesRegion
  | TENSOR name=STRING dtype=IDENT '[' numberList ']' byteRange? regionDigest? '=' expr # tensorRegion
  ;

// `safetensors(metadata: '{"format":"pt"}', tensors)`: the header a safetensors writer makes of
// the tensor regions after it, with the `__metadata__` member where it is listed (or none). The
// builder checks the names: `tensors` once, `metadata` at most once, with its text.
indexPart : name=IDENT (':' TEXT_STRING+)? ;

// In a payload literal, a left-out offset is where the payload literal before it (in text
// order) ends.
byteRange : '@' offset=NUMBER? '+' size=NUMBER ;

// The digest of the bytes the region must rebuild, so that a bad edit is reported at its region.
regionDigest : DIGEST hash=NUMBER ;

// --- expressions ---------------------------------------------------------------------------

expr : term (':' annotation=streamType)? ;

term
  : LIT encoding=IDENT streamType byteRange?                       # payloadLit
  | LIT streamType '[' numberList ']'                              # inlineLit
  | TEXT TEXT_STRING+                                              # textLit
  | CONST streamType value=NUMBER                                  # constExpr
  | CONCAT '(' (expr (',' expr)*)? ')'                             # concatExpr
  | REPEAT count=NUMBER '(' expr ')'                               # repeatExpr
  | MAP fn=IDENT (param=NUMBER | '[' numberList ']' (per=IDENT run=NUMBER)?)? '(' expr ')' # mapExpr
  | SCAN op=IDENT init=NUMBER '(' expr ')'                         # scanExpr
  | MERGE '(' (mergeField (',' mergeField)*)? ')'                  # mergeExpr
  | '?' streamType                                                 # holeExpr
  ;

// `text '{"a":1}' '\n'`: bytes written as text, a u8 stream of their length. Adjacent pieces
// join, so that a long text can be broken over lines.

// A payload literal without its range is a literal hole (`lit auto u8[16]`): a literal with
// the words it must produce, which the tool codes. `auto` names no encoding: the smallest.

// `map add [c0, c1] per 64 (e)`: each constant for 64 consecutive words. `per` is an IDENT,
// checked by the builder, so that it stays free as a field name.

// Field names may be keywords too: the printer writes any name it is given.
mergeField : (fieldName ':')? expr ;

fieldName
  : IDENT | BREVIS | SOURCE | SIZE | XXH64 | PAYLOAD | HEADER | BYTES | TENSOR | DIGEST
  | LIT | TEXT | CONST | CONCAT | REPEAT | MAP | SCAN | MERGE | SAFETENSORS
  ;

// `u8[1024]`: the name is checked to be u<W> by the builder.
streamType : name=IDENT '[' length=NUMBER ']' ;

numberList : (NUMBER (',' NUMBER)*)? ;

// --- tokens --------------------------------------------------------------------------------

BREVIS  : 'brevis' ;
SOURCE  : 'source' ;
SIZE    : 'size' ;
XXH64   : 'xxh64' ;
PAYLOAD : 'payload' ;
HEADER  : 'header' ;
BYTES   : 'bytes' ;
TENSOR  : 'tensor' ;
DIGEST  : 'digest' ;
LIT     : 'lit' ;
TEXT    : 'text' ;
CONST   : 'const' ;
CONCAT  : 'concat' ;
REPEAT  : 'repeat' ;
MAP     : 'map' ;
SCAN    : 'scan' ;
MERGE   : 'merge' ;
SAFETENSORS : 'safetensors' ;

// Punctuation is named (rather than implicit) so that the frontend can count nesting depth
// before parsing, and so that "expecting {...}" lists keywords first.
LPAREN   : '(' ;
RPAREN   : ')' ;
LBRACKET : '[' ;
RBRACKET : ']' ;
COMMA    : ',' ;
COLON    : ':' ;
EQUALS   : '=' ;
AT       : '@' ;
PLUS     : '+' ;
QUESTION : '?' ;

IDENT : [a-zA-Z_] [a-zA-Z0-9_]* ;

// Deliberately loose (`12ab`, `0xg` are one token) so the builder can say "malformed number".
NUMBER : [0-9] [a-zA-Z0-9_]* ;

// Escapes are checked by the builder; only \" \\ \xNN are valid.
STRING : '"' (~["\\\r\n] | '\\' ~[\r\n])* '"' ;

// Text in single quotes, so that JSON reads as itself. Escapes are checked by the builder:
// \' \\ \n \t \r \xNN.
TEXT_STRING : '\'' (~['\\\r\n] | '\\' ~[\r\n])* '\'' ;

COMMENT : '#' ~[\r\n]* -> skip ;
WS      : [ \t\r\n]+ -> skip ;

// The lexer never fails: these become tokens that the frontend reports with a precise message
// before parsing.
UNTERMINATED_STRING
  : '"' (~["\\\r\n] | '\\' ~[\r\n])*
  | '\'' (~['\\\r\n] | '\\' ~[\r\n])*
  ;
UNEXPECTED_CHAR     : . ;
