// JSON Schema → TypeScript-like types beyond the upstream vectors (cases read from openai-harmony's code).
#include "text/harmony_typescript.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "text/harmony_renderer.h"

namespace gossamer::text::harmony {
namespace {

using Json = nlohmann::ordered_json;

std::string ts(const char* schema) {
  return json_schema_to_typescript(Json::parse(schema));
}

TEST(HarmonyTypescript, Scalars) {
  EXPECT_EQ(ts(R"({"type":"string"})"), "string");
  EXPECT_EQ(ts(R"({"type":"integer"})"), "number");
  EXPECT_EQ(ts(R"({"type":"number"})"), "number");
  EXPECT_EQ(ts(R"({"type":"boolean"})"), "boolean");
  EXPECT_EQ(ts(R"({"type":"null"})"), "any");
  EXPECT_EQ(ts(R"({})"), "any");
  EXPECT_EQ(ts(R"({"anyOf":[{"type":"string"}]})"), "any");
  EXPECT_EQ(ts(R"({"enum":["a","b"]})"), "any");
  EXPECT_EQ(ts(R"({"type":["integer","string",3,"null"]})"), "number | string | null");
  EXPECT_EQ(ts(R"({"type":"array"})"), "Array<any>");
  EXPECT_EQ(ts(R"({"type":"array","items":{"type":"array","items":{"type":"integer"}}})"), "number[][]");
  EXPECT_EQ(ts(R"({"type":"string","enum":["x",1,"y"]})"), R"("x" | "y")");
  EXPECT_EQ(ts(R"({"type":"string","enum":[1]})"), "string");
  EXPECT_EQ(ts("true"), "any");
  EXPECT_EQ(ts("[1,2]"), "any");
}

TEST(HarmonyTypescript, EmptyObject) {
  EXPECT_EQ(ts(R"({"type":"object","properties":{}})"), "{\n}");
}

TEST(HarmonyTypescript, PropertyOrderIsInputOrder) {
  EXPECT_EQ(ts(R"({"type":"object","properties":{"zeta":{"type":"string"},"alpha":{"type":"integer"}},
                   "required":["alpha"]})"),
            "{\nzeta?: string,\nalpha: number,\n}");
}

TEST(HarmonyTypescript, DefaultsEnumsAndNullable) {
  EXPECT_EQ(ts(R"({"type":"object","properties":{
      "unit": {"type":"string","enum":["c","f"],"default":"c"},
      "name": {"type":"string","default":"a \"b\""},
      "count": {"type":"integer","default":3},
      "ratio": {"type":"number","default":0.5},
      "flags": {"type":"array","items":{"type":"boolean"},"default":[true,false]},
      "opt": {"type":"object","default":{"a":[1,2]}},
      "maybe": {"type":["string","null"],"nullable":true}
  }})"),
            "{\n"
            "unit?: \"c\" | \"f\", // default: c\n"
            "name?: string, // default: \"a \"b\"\"\n"
            "count?: number, // default: 3\n"
            "ratio?: number, // default: 0.5\n"
            "flags?: boolean[], // default: [true,false]\n"
            "opt?: {\n    }, // default: {\"a\":[1,2]}\n"
            "maybe?: string | null,\n"
            "}");
}

TEST(HarmonyTypescript, NestedObjectIndentsAndRepeatsDescription) {
  EXPECT_EQ(ts(R"({"type":"object","properties":{
      "opts": {"type":"object","description":"Options","properties":{
          "depth": {"type":"integer","description":"How deep"},
          "inner": {"type":"object","properties":{"x":{"type":"string"}},"required":["x"]}
      },"required":["depth"]}
  },"required":["opts"]})"),
            "{\n"
            "// Options\n"
            "opts:     // Options\n"
            "{\n"
            "    // How deep\n"
            "    depth: number,\n"
            "    inner?: {\n"
            "        x: string,\n"
            "        },\n"
            "    },\n"
            "}");
}

TEST(HarmonyTypescript, OneOfProperty) {
  // Property description equal to the first variant's: printed once, as the variant's comment is dropped too.
  EXPECT_EQ(ts(R"({"type":"object","properties":{
      "v": {"description":"same","oneOf":[{"type":"string","description":"same"},
                                          {"type":"integer","nullable":true,"description":"an int","default":1}]}
  }})"),
            "{\n"
            "v?:\n"
            " | string\n"
            " | number | null // an int default: 1\n"
            ",\n"
            "}");
  // A variant enum default is bare in a property, quoted at the top level.
  EXPECT_EQ(ts(R"({"type":"object","properties":{
      "w": {"oneOf":[{"type":"string","enum":["on","off"],"default":"on"},{"type":"boolean"}]}
  },"required":["w"]})"),
            "{\n"
            "w:\n"
            " | \"on\" | \"off\" // default: on\n"
            " | boolean\n"
            ",\n"
            "}");
}

TEST(HarmonyTypescript, TopLevelOneOf) {
  EXPECT_EQ(ts(R"({"oneOf":[{"type":"string","enum":["on"],"default":"on","description":"mode"},
                            {"type":"integer","nullable":true}]})"),
            "\n | \"on\" // mode default: \"on\"\n | number | null");
}

TEST(HarmonyTypescript, TitleExamplesAndNonStringExamples) {
  EXPECT_EQ(ts(R"({"type":"object","properties":{
      "q": {"type":"string","title":"Query","description":"What to find","examples":["a",2,"b"]},
      "n": {"type":"integer","examples":[1,2]}
  }})"),
            "{\n"
            "// Query\n//\n// What to find\n// Examples:\n// - \"a\"\n// - \"b\"\n"
            "q?: string,\n"
            "// Examples:\n"
            "n?: number,\n"
            "}");
}

TEST(HarmonyTypescript, ToolsSectionShapes) {
  ToolNamespace ns;
  ns.name = "functions";
  ns.description = "Line one\r\n\nLine three\n";
  ns.tools.push_back({"apply_patch", "Patch files.\n\nCarefully.", Json::parse(R"({"type":"string"})")});
  ns.tools.push_back({"noop", "", Json::parse("{}")});
  ns.tools.push_back({"empty", "Empty.", Json::parse(R"({"type":"object","properties":{}})")});
  EXPECT_EQ(HarmonyRenderer::tools_section_text({{"functions", ns}}),
            "# Tools\n\n## functions\n\n// Line one\n// \n// Line three\nnamespace functions {\n\n"
            "// Patch files.\n// \n// Carefully.\ntype apply_patch = (_: string) => any;\n\n"
            "type noop = (_: any) => any;\n\n"
            "// Empty.\ntype empty = (_: {\n}) => any;\n\n"
            "} // namespace functions");
}

TEST(HarmonyTypescript, DeeplyOddSchemasDoNotThrow) {
  EXPECT_NO_THROW(ts(R"({"type":"object","properties":[1,2],"required":"x"})"));
  EXPECT_NO_THROW(ts(R"({"type":"object","properties":{"a":5,"b":null,"c":{"oneOf":[]}}})"));
  EXPECT_NO_THROW(ts(R"({"oneOf":[1,"x",null]})"));
  EXPECT_NO_THROW(ts(R"({"type":"string","enum":null,"title":7,"description":[]})"));
}

}  // namespace
}  // namespace gossamer::text::harmony
