// The Loom spec language: operators, parallelization forms, axioms, rules and models.
grammar Loom;

file : decl* EOF ;

decl
  : importDecl
  | opDecl
  | parallelDecl
  | fusedDecl
  | axiomDecl
  | ruleDecl
  | modelDecl
  | scheduleDecl
  ;

importDecl : 'import' STRING ';' ;

// ---- operators ---------------------------------------------------------------------------

opDecl : 'op' name=ID attrParams? '(' inputParams? ')' '->' outputs '{' opStmt* '}' ;

attrParams : '<' attrParam (',' attrParam)* '>' ;
attrParam  : name=ID (':' 'int' domain?)? ;
domain
  : 'in' '{' domainItem (',' domainItem)* '}'   # enumDomain
  | 'in' lo=signedInt '..' hi=signedInt          # rangeDomain
  ;
domainItem : (label=ID '=')? value=signedInt ;
signedInt  : '-'? INT ;

inputParams : inputParam (',' inputParam)* ;
inputParam  : name=ID (':' shape)? note* ;
// What an operator's input or output holds, for those who make or read its values (inputs:
// `@index(table)` row indices of `table`, `@init(1)` a weight that starts at that constant,
// `@statistic` a running statistic (not trained), `@positive` values that must be positive;
// outputs: `@probabilities` a distribution over the last axis).
note        : '@' role=ID ('(' (argName=ID | argValue=signedInt) ')')? ;
shape       : '[' (dim (',' dim)*)? ']' ;
dim
  : '*' ID     # packDim
  | expr       # exprDim
  ;

outputs
  : shape note*                                  # singleOutput
  | '(' outputParam (',' outputParam)* ')'       # namedOutputs
  ;
outputParam : name=ID ':' shape note* ;

opStmt
  : 'require' expr ';'                                   # requireStmt
  | 'let' name=ID '[' indexList? ']' '=' expr ';'        # letStmt
  | name=ID '[' indexList? ']' '=' expr ';'              # defineStmt
  ;
indexList : indexVar (',' indexVar)* ;
indexVar  : pack='*'? name=ID ;

// ---- parallelization forms ----------------------------------------------------------------

parallelDecl : 'parallel' name=ID attrParams? '(' inputParams ')' '{' parStmt* '}' ;

parStmt
  : 'require' expr ';'                                        # parRequire
  | degree=('D' | 'P') '[' index=expr ']' op=('*=' | '/=') amount=expr ';'   # dimDegreeUpdate
  | degree=('V' | 'R') op=('*=' | '/=') amount=expr ';'       # scalarDegreeUpdate
  | 'values' kind=(ID | 'sum') ';'                                      # valuesStmt
  | 'backward' form=ID attrArgs? ';'                          # backwardStmt
  | 'lowers_to' collective=ID ';'                             # lowersStmt
  ;

fusedDecl : 'fused' name=ID attrParams? '(' inputParams ')' '=' term ('lowers_to' collective=ID)? ';' ;

// ---- axioms and rules ---------------------------------------------------------------------

axiomDecl : 'axiom' name=ID ':' quantifier? lhs=term '==' rhs=term ';' ;
ruleDecl  : 'rule' name=ID ':' quantifier? lhs=ruleSide '=>' rhs=ruleSide ';' ;
// A rule with several outputs writes each side as a tuple; the outputs correspond in order.
ruleSide  : term | '(' term (',' term)+ ')' ;

quantifier : 'forall' binder (',' binder)* ('where' cond=expr)? '.' ;
binder
  : name=ID ':' 'int' domain?                    # intBinder
  | name=ID ':' 'int' cmp=('>' | '>=' | '<' | '<=' | '!=') bound=signedInt  # boundedIntBinder
  | name=ID (':' shape degreeAnnotation?)?       # tensorBinder
  ;
degreeAnnotation : '{' degreeEntry (',' degreeEntry)* '}' ;
degreeEntry
  : key=('V' | 'R') ':' expr                      # scalarDegreeEntry
  | key=('D' | 'P') ':' '[' expr (',' expr)* ']'  # listDegreeEntry
  ;

term
  : term '.' (field=ID | position=INT)                     # projectTerm
  | name=ID attrArgs? '(' (term (',' term)*)? ')'          # applyTerm
  | name=ID                                                # varTerm
  | '-'? (INT | REAL)                                      # literalTerm
  ;
attrArgs : '<' attrArg (',' attrArg)* '>' ;
attrArg  : (name=ID '=')? value=attrValue ;
// Restricted so that the closing '>' is never read as a comparison; parenthesize anything else.
attrValue
  : signedInt       # intAttrValue
  | ID              # nameAttrValue
  | '(' expr ')'    # exprAttrValue
  ;

// ---- models --------------------------------------------------------------------------------

// A model: size parameters with defaults, then its inputs, weights, operator applications and
// outputs. `input`, `weight` and `output` are read as names, not keywords, so that specs may keep
// using them as identifiers; the parser checks them.
modelDecl   : 'model' name=ID modelParams? '{' modelStmt* '}' ;
modelParams : '<' modelParam (',' modelParam)* '>' ;
modelParam  : name=ID '=' value=signedInt ;

modelStmt
  : 'require' expr ';'                                  # modelRequire
  | kind=ID name=ID ':' shape ';'                       # modelTensor
  | 'let' name=ID '=' term ';'                          # modelLet
  | name=ID '=' term ';'                                # modelAssign
  | kind=ID name=ID ('=' term)? ';'                     # modelOutput
  | 'for' var=ID '<' bound=expr '{' modelStmt* '}'      # modelFor
  ;

// ---- schedules ----------------------------------------------------------------------------

// A plan written by hand, SuperScaler's way: which operators are cut into pieces, where each piece
// runs, what happens before what, micro-batches and recomputation. A statement is a verb, its
// targets, and further clauses each led by a word (`split fc1 by j/4 to 0..3;`); the words are read
// as names, not keywords, and the parser checks them (see docs/language.md).
scheduleDecl : 'schedule' name=ID 'for' model=ID modelParams? '{' scheduleStmt* '}' ;
scheduleStmt : verb=ID scheduleClause (word=ID scheduleClause)* ';' ;
scheduleClause : scheduleItem (',' scheduleItem)* ;
scheduleItem
  : lo=INT '..' hi=INT                                  # rangeItem
  | INT                                                  # numberItem
  | index=ID '/' degree=INT                              # splitItem
  | first=operatorName? '..' last=operatorName?          # operatorRangeItem
  | operatorName                                         # nameItem
  ;
operatorName : ID | STRING ;

// ---- expressions (values, dimensions and conditions share one syntax) ---------------------

expr
  : '(' expr ')'                                               # parenExpr
  | name=ID '[' (indexExpr (',' indexExpr)*)? ']' ('??' fallback=primaryValue)?   # readExpr
  | reducer=('sum' | 'max' | 'min') '(' reductionVar (',' reductionVar)* ')' body=expr   # reduceExpr
  | fn=(ID | 'max' | 'min') '(' expr (',' expr)* ')'            # callExpr
  | op=('-' | '!') expr                                        # unaryExpr
  | expr op=('*' | '/' | '%') expr                             # mulExpr
  | expr op=('+' | '-') expr                                   # addExpr
  | expr op=('<' | '<=' | '>' | '>=') expr                     # compareExpr
  | expr op=('==' | '!=') expr                                 # equalExpr
  | expr '&&' expr                                             # andExpr
  | expr '||' expr                                             # orExpr
  | <assoc = right> expr '?' expr ':' expr                     # ternaryExpr
  | ('D' | 'P') '[' expr ']'                                   # dimDegreeRef
  | ('V' | 'R')                                                # scalarDegreeRef
  | INT                                                        # intLiteral
  | REAL                                                       # realLiteral
  | 'inf'                                                      # infLiteral
  | name=ID                                                    # nameExpr
  ;

primaryValue
  : '-'? (INT | REAL | 'inf')
  | ID
  | '(' expr ')'
  ;

indexExpr
  : '*' name=ID      # packIndex
  | expr             # plainIndex
  ;

reductionVar : name=ID ('<' bound=expr)? ;

// ---- lexer --------------------------------------------------------------------------------

ID     : [A-Za-z_] [A-Za-z0-9_]* ;
INT    : [0-9]+ ;
REAL   : [0-9]+ '.' [0-9]+ ([eE] [+-]? [0-9]+)? | [0-9]+ [eE] [+-]? [0-9]+ ;
STRING : '"' (~["\\\r\n] | '\\' .)* '"' ;

LINE_COMMENT  : '//' ~[\r\n]* -> skip ;
BLOCK_COMMENT : '/*' .*? '*/' -> skip ;
WS            : [ \t\r\n]+ -> skip ;
