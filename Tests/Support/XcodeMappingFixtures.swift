import Foundation
import ObjectModel

/// An `NSExpression` as an `NSKeyedArchiver` archive holds it, built from the classes and keys
/// docs/coredata-formats.md ("Xcode mapping models") records: what Xcode writes into a mapping
/// model's `valueexpressiondata`.
package indirect enum ArchivedExpression: Sendable {
    /// `NSConstantValueExpression`: `NSConstantValue` a string (an object), a number or a Boolean (inline), or nil (absent).
    case constant(PropertyListNode?)
    /// `NSVariableExpression`: `NSVariable`.
    case variable(String)
    /// `NSKeyPathExpression`: `NSOperand`, `NSSelectorName` `valueForKeyPath:`, `NSArguments` one `NSKeyPathSpecifierExpression` (`NSKeyPath`).
    case keyPath(ArchivedExpression, String)
    /// `NSFunctionExpression`: `NSOperand`, `NSSelectorName`, `NSArguments`.
    case function(ArchivedExpression, selector: String, [ArchivedExpression])
    /// Any class with any keys (`$class` added), for what readers must refuse.
    case object(String, [String: PropertyListNode])

    /// `$source.<path>`.
    package static func source(_ path: String) -> ArchivedExpression { .keyPath(.variable("source"), path) }

    /// `FUNCTION($manager, "destinationInstancesForEntityMappingNamed:sourceInstances:", "<mapping>", <objects>)`.
    package static func destinations(_ mapping: String, _ objects: ArchivedExpression) -> ArchivedExpression {
        .function(.variable("manager"), selector: "destinationInstancesForEntityMappingNamed:sourceInstances:",
                  [.constant(.string(mapping)), objects])
    }

    /// The keyed archive, the expression under `root`.
    package var archive: Data {
        var builder = ArchiveBuilder()
        let root = builder.expression(self)
        return builder.archive(root: root)
    }

    /// The archive in base64, as `xcmapping.xml` holds binary attributes.
    package var base64: String { archive.base64EncodedString() }
}

extension ArchiveBuilder {
    /// Appends the objects of `expression`; returns the UID of its top object.
    package mutating func expression(_ expression: ArchivedExpression) -> Int {
        switch expression {
        case .constant(let value):
            var fields: [String: PropertyListNode] = ["NSExpressionType": .integer(0)]
            switch value {
            case .string(let text)?: fields["NSConstantValue"] = string(text)
            case let inline?: fields["NSConstantValue"] = inline
            case nil: break
            }
            return object("NSConstantValueExpression", fields)
        case .variable(let name):
            return object("NSVariableExpression", ["NSExpressionType": .integer(2), "NSVariable": string(name)])
        case .keyPath(let operand, let path):
            let operandUID = self.expression(operand)
            let specifier = object("NSKeyPathSpecifierExpression", ["NSKeyPath": string(path)])
            let arguments = object("NSArray", ["NS.objects": .array([.uid(specifier)])])
            return object("NSKeyPathExpression", [
                "NSExpressionType": .integer(3), "NSOperand": .uid(operandUID),
                "NSSelectorName": string("valueForKeyPath:"), "NSArguments": .uid(arguments),
            ])
        case .function(let operand, let selector, let arguments):
            let operandUID = self.expression(operand)
            let items = arguments.map { PropertyListNode.uid(self.expression($0)) }
            let list = object("NSArray", ["NS.objects": .array(items)])
            return object("NSFunctionExpression", [
                "NSExpressionType": .integer(4), "NSOperand": .uid(operandUID),
                "NSSelectorName": string(selector), "NSArguments": .uid(list),
            ])
        case .object(let className, let fields):
            return object(className, fields)
        }
    }

    /// An archived `NSDictionary` of strings (a mapping model's `userinfodata`).
    package static func stringDictionary(_ entries: [String: String]) -> Data {
        var builder = ArchiveBuilder()
        let sorted = entries.sorted { $0.key < $1.key }
        let keys = sorted.map { builder.string($0.key) }
        let values = sorted.map { builder.string($0.value) }
        let root = builder.object("NSDictionary", ["NS.keys": .array(keys), "NS.objects": .array(values)])
        return builder.archive(root: root)
    }
}

/// The text of an `xcmapping.xml` around its objects: the header Xcode writes (a Core Data XML
/// store whose metadata names Xcode's mapping entities and their version hashes, as
/// docs/coredata-formats.md records it).
package enum XcodeMappingXML {
    /// One property mapping object (`type` `ATTRIBUTE` or `RELATIONSHIP`): its expression written
    /// (`valueexpressiondata`), generated (`autogenerateexpression`) or neither; `owner` the entity
    /// mapping its `entitymapping` refers to, when it writes one.
    package static func property(_ type: String, _ id: String, _ name: String, owner: String? = nil,
                                 expression: ArchivedExpression? = nil, generated: Bool = false) -> String {
        """
            <object type="XDDEV\(type)MAPPING" id="\(id)">
                <attribute name="name" type="string">\(name)</attribute>
                \(generated ? #"<attribute name="autogenerateexpression" type="bool">1</attribute>"# : "")
                \(expression.map { #"<attribute name="valueexpressiondata" type="binary">\#($0.base64)</attribute>"# } ?? "")
                \(owner.map { #"<relationship name="entitymapping" type="1/1" destination="XDDEVENTITYMAPPING" idrefs="\#($0)"></relationship>"# } ?? "")
            </object>
        """
    }

    package static func document(_ objects: String) -> String {
        """
        <?xml version="1.0" standalone="yes"?>
        <!DOCTYPE database SYSTEM "file:///System/Library/DTDs/CoreData.dtd">

        <database>
            <databaseInfo>
                <version>134481920</version>
                <UUID>5D7C7B7E-9E51-4E0C-9D3B-2F4C8F1E2A10</UUID>
                <nextObjectID>120</nextObjectID>
                <metadata>
                    <plist version="1.0">
                        <dict>
                            <key>NSPersistenceFrameworkVersion</key>
                            <integer>1448</integer>
                            <key>NSStoreModelVersionHashes</key>
                            <dict>
                                <key>XDDevAttributeMapping</key>
                                <data>
                        0plcXXRN7XHKl5CcF+fwriFmUpON3ZtcI/AfK748aWc=
                        </data>
                                <key>XDDevEntityMapping</key>
                                <data>
                        qeN1Ym3TkWN1G6dU9RfX6Kd2ccEvcDVWHpd3LpLgboI=
                        </data>
                                <key>XDDevMappingModel</key>
                                <data>
                        EqtMzvRnVZWkXwBHu4VeVGy8UyoOe+bi67KC79kphlQ=
                        </data>
                                <key>XDDevPropertyMapping</key>
                                <data>
                        XN33V44TTGY4JETlMoOB5yyTKxB+u4slvDIinv0rtGA=
                        </data>
                                <key>XDDevRelationshipMapping</key>
                                <data>
                        akYY9LhehVA/mCb4ATLWuI9XGLcjpm14wWL1oEBtIcs=
                        </data>
                            </dict>
                            <key>NSStoreModelVersionIdentifiers</key>
                            <array>
                                <string></string>
                            </array>
                        </dict>
                    </plist>
                </metadata>
            </databaseInfo>
        \(objects)
        </database>

        """
    }
}
