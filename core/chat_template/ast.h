#pragma once
// The parsed template: expression and statement nodes. One plain struct per tree level (a kind
// plus children) rather than a class per node, because the evaluator dispatches with a switch
// and the nodes carry no behaviour of their own. Every node keeps its template line for errors.
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/chat_template/value.h"

namespace drift::jinja {

struct Expr;
struct Stmt;
using ExprPtr = std::unique_ptr<Expr>;
using StmtList = std::vector<std::unique_ptr<Stmt>>;

enum class ExprKind {
  kLiteral,    // value
  kName,       // name
  kList,       // children
  kTuple,      // children
  kDict,       // children: key, value, key, value, ...
  kAttribute,  // children[0].name
  kSubscript,  // children[0][children[1]]
  kSlice,      // children[0][children[1]:children[2]:children[3]] (null children: absent bounds)
  kCall,       // children[0](children[1..], keywords)
  kFilter,     // children[0] | name(children[1..], keywords); children[0] null in a filter block
  kTest,       // children[0] is [not] name(children[1..], keywords); negated
  kUnary,      // op ("-", "+", "not") children[0]
  kBinary,     // children[0] op children[1]: + - * / // % ** ~
  kAnd,
  kOr,
  kCompare,    // children[0] ops[0] children[1] ops[1] children[2] ...: == != < <= > >= in notin
  kCondition,  // children[0] if children[1] else children[2] (children[2] null: undefined)
};

struct Expr {
  ExprKind kind = ExprKind::kLiteral;
  int line = 0;
  Value value;       // kLiteral
  std::string name;  // kName, kAttribute, kFilter, kTest; operator of kUnary / kBinary
  bool negated = false;
  std::vector<ExprPtr> children;
  std::vector<std::pair<std::string, ExprPtr>> keywords;  // kCall, kFilter, kTest
  std::vector<std::string> ops;                           // kCompare
};

enum class StmtKind {
  kData,         // text
  kOutput,       // {{ expr }}
  kIf,           // conditions[i] -> bodies[i]; bodies.back() is the else branch when longer
  kFor,          // for target in expr [if filter]: bodies[0], else: bodies[1]
  kSet,          // set target = expr
  kSetBlock,     // set target %} bodies[0] {% endset (filter: optional filter chain)
  kMacro,        // macro name(params = defaults): bodies[0]
  kCallBlock,    // call(params) expr: bodies[0] is caller's body
  kFilterBlock,  // filter chain over bodies[0]
  kWith,         // with assignments: bodies[0]
  kBreak,
  kContinue,
  kBody,  // bodies[0] as-is ({% generation %})
};

// An assignment target: a name, names to unpack ("a, b"), or a namespace attribute ("ns.x").
struct Target {
  std::vector<std::string> names;  // one name unless unpacking
  bool unpack = false;
  std::string attribute;  // set: names[0] is the namespace
};

struct Stmt {
  StmtKind kind = StmtKind::kData;
  int line = 0;
  std::string text;  // kData; kMacro name
  ExprPtr expr;      // kOutput, kFor iterable, kSet value, kCallBlock call, kSetBlock/kFilterBlock filter
  ExprPtr filter;    // kFor inline if
  Target target;     // kFor, kSet, kSetBlock
  std::vector<ExprPtr> conditions;  // kIf
  std::vector<StmtList> bodies;
  // kMacro, kCallBlock: parameters with optional defaults (null: required). kWith: names and values.
  std::vector<std::pair<std::string, ExprPtr>> params;
};

}  // namespace drift::jinja
