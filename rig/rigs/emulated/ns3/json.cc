#include "json.h"

#include <cctype>
#include <cstdlib>
#include <fstream>
#include <sstream>

namespace rigemu
{

namespace
{

class Reader
{
  public:
    explicit Reader(const std::string& text)
        : m_text(text)
    {
    }

    Json Document()
    {
        Json value = Value();
        SkipSpace();
        if (m_pos != m_text.size())
        {
            Fail("trailing characters");
        }
        return value;
    }

  private:
    const std::string& m_text;
    size_t m_pos = 0;

    [[noreturn]] void Fail(const std::string& what) const
    {
        throw std::runtime_error("config JSON: " + what + " at offset " + std::to_string(m_pos));
    }

    void SkipSpace()
    {
        while (m_pos < m_text.size() && std::isspace(static_cast<unsigned char>(m_text[m_pos])))
        {
            ++m_pos;
        }
    }

    char Peek()
    {
        SkipSpace();
        if (m_pos >= m_text.size())
        {
            Fail("unexpected end");
        }
        return m_text[m_pos];
    }

    void Expect(char c)
    {
        if (Peek() != c)
        {
            Fail(std::string("expected '") + c + "'");
        }
        ++m_pos;
    }

    bool Literal(const char* word)
    {
        std::string w(word);
        if (m_text.compare(m_pos, w.size(), w) == 0)
        {
            m_pos += w.size();
            return true;
        }
        return false;
    }

    Json Value()
    {
        Json v;
        char c = Peek();
        if (c == '{')
        {
            v.type = Json::Type::Object;
            ++m_pos;
            if (Peek() == '}')
            {
                ++m_pos;
                return v;
            }
            while (true)
            {
                std::string key = String();
                Expect(':');
                v.object[key] = Value();
                if (Peek() == ',')
                {
                    ++m_pos;
                    continue;
                }
                Expect('}');
                return v;
            }
        }
        if (c == '[')
        {
            v.type = Json::Type::Array;
            ++m_pos;
            if (Peek() == ']')
            {
                ++m_pos;
                return v;
            }
            while (true)
            {
                v.array.push_back(Value());
                if (Peek() == ',')
                {
                    ++m_pos;
                    continue;
                }
                Expect(']');
                return v;
            }
        }
        if (c == '"')
        {
            v.type = Json::Type::String;
            v.string = String();
            return v;
        }
        if (Literal("true") || Literal("false"))
        {
            v.type = Json::Type::Bool;
            v.boolean = m_text[m_pos - 4] == 't'; // "true" is 4 characters, "false" ends "alse"
            return v;
        }
        if (Literal("null"))
        {
            return v;
        }
        const char* start = m_text.c_str() + m_pos;
        char* end = nullptr;
        v.number = std::strtod(start, &end);
        if (end == start)
        {
            Fail("bad value");
        }
        m_pos += end - start;
        v.type = Json::Type::Number;
        return v;
    }

    std::string String()
    {
        Expect('"');
        std::string out;
        while (m_pos < m_text.size() && m_text[m_pos] != '"')
        {
            char c = m_text[m_pos++];
            if (c == '\\' && m_pos < m_text.size())
            {
                char e = m_text[m_pos++];
                switch (e)
                {
                case 'n':
                    out += '\n';
                    break;
                case 't':
                    out += '\t';
                    break;
                case 'u': // config strings are ASCII; keep the code point's low byte
                    out += static_cast<char>(std::strtol(m_text.substr(m_pos, 4).c_str(), nullptr, 16));
                    m_pos += 4;
                    break;
                default:
                    out += e;
                }
            }
            else
            {
                out += c;
            }
        }
        Expect('"');
        return out;
    }
};

} // namespace

Json
Json::Parse(const std::string& text)
{
    return Reader(text).Document();
}

Json
Json::ParseFile(const std::string& path)
{
    std::ifstream in(path);
    if (!in)
    {
        throw std::runtime_error("cannot read config file " + path);
    }
    std::stringstream buffer;
    buffer << in.rdbuf();
    return Parse(buffer.str());
}

bool
Json::Has(const std::string& key) const
{
    return type == Type::Object && object.count(key) && object.at(key).type != Type::Null;
}

const Json&
Json::At(const std::string& key) const
{
    if (!Has(key))
    {
        throw std::runtime_error("config: missing field '" + key + "'");
    }
    return object.at(key);
}

double
Json::Num(const std::string& key) const
{
    const Json& v = At(key);
    if (v.type != Type::Number)
    {
        throw std::runtime_error("config: field '" + key + "' is not a number");
    }
    return v.number;
}

double
Json::Num(const std::string& key, double fallback) const
{
    return Has(key) ? Num(key) : fallback;
}

std::string
Json::Str(const std::string& key) const
{
    const Json& v = At(key);
    if (v.type != Type::String)
    {
        throw std::runtime_error("config: field '" + key + "' is not a string");
    }
    return v.string;
}

std::string
Json::Str(const std::string& key, const std::string& fallback) const
{
    return Has(key) ? Str(key) : fallback;
}

} // namespace rigemu
